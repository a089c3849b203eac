"""The median and quantile mechanisms: Duff, the quantile exponential mechanism, smooth
sensitivity with Cauchy, Laplace and Laplace-log-normal noise, global noise, PTR, and
their error bounds."""
