"""The mean mechanisms: Duff's mean, global Laplace and Gaussian noise, and the trimmed means
with smooth-sensitivity noise."""
