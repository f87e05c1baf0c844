"""Running Nsight Compute for `perfgate capture` and `perfgate doctor`: the command, the runner
and the machine checks."""
