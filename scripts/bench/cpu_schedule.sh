# The measurement schedule of the CPU networks, shared by cpu_vs_pytorch and before_after.py:
# batch, timed iterations per repeat, repeats and warm-up iterations per network (a config name
# under configs/). Sourced; reads $quick (1: a smoke run's fewer iterations).
batch_of() { case "$1" in resnet18-cifar) echo 128 ;; *) echo 100 ;; esac; }
iters_of() {
  if [[ ${quick:-0} == 1 ]]; then echo 1; return; fi
  case "$1" in resnet18-cifar) echo 1 ;; *) echo 10 ;; esac
}
repeats_of() {
  if [[ ${quick:-0} == 1 ]]; then echo 2; return; fi
  case "$1" in resnet18-cifar) echo 3 ;; *) echo 5 ;; esac
}
warmup_of() { case "$1" in resnet18-cifar) echo 1 ;; *) echo 3 ;; esac; }
