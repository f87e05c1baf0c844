"""Which launches are one kernel, who wrote it (library families), and which baselined kernel
it is (matching, with its fallbacks for renamed and reshaped kernels)."""
