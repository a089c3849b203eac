"""The mode mechanisms on a finite integer domain: Duff's mode, the count EM, report noisy
max, permute-and-flip and the stability-based histogram."""
