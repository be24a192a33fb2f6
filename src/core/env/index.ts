// What the host is: its GPUs (nvidia-smi), memory and cgroup limits, installed packages.
export {
  findGpu,
  hostInventory,
  type HostInventory,
  nvidiaSmiCsvRows,
  packageInstalled,
  packageVersion,
  parseNvidiaSmiInventory,
} from './host.js';
