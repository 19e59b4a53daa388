#!/usr/bin/env bash
# One-shot probe of a GPU host: versions, NVML fields, and a tiny real ncu app-range profile
# whose CSV and .ncu-rep are kept as recorded test data (tests/recorded/ncu/).
# Usage: OUT=/some/dir bash scripts/device_probe.sh
set -u
OUT=${OUT:-/tmp/probe}; mkdir -p "$OUT"
exec > >(tee "$OUT/probe.log") 2>&1
PY=${PYTHON:-python3}
echo "== nvidia-smi"; nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version,memory.total,power.limit --format=csv
echo "== python/torch"
$PY - <<'PY'
import sys, torch, numpy
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "numpy", numpy.__version__)
p = torch.cuda.get_device_properties(0)
print("name", p.name, "sm", p.multi_processor_count, "mem", p.total_memory)
for a in ("L2_cache_size", "pci_bus_id", "pci_device_id", "pci_domain_id", "uuid"):
    print(a, getattr(p, a, "<missing>"))
PY
echo "== pynvml"
$PY - <<'PY'
import time, pynvml as n
from importlib.metadata import version
print("nvidia-ml-py", version("nvidia-ml-py"))
n.nvmlInit(); h = n.nvmlDeviceGetHandleByIndex(0)
print("driver", n.nvmlSystemGetDriverVersion(), "busId", n.nvmlDeviceGetPciInfo(h).busId)
e0 = n.nvmlDeviceGetTotalEnergyConsumption(h); t0 = time.perf_counter(); changes = []
last = e0
while time.perf_counter() - t0 < 1.5:
    e = n.nvmlDeviceGetTotalEnergyConsumption(h)
    if e != last: changes.append(round(time.perf_counter() - t0, 4)); last = e
print("energy counter changes in 1.5 s at", changes)
try:
    v = n.nvmlDeviceGetFieldValues(h, [186])[0]
    print("field186 ret", v.nvmlReturn, "value", v.value.uiVal, v.value.ullVal)
except Exception as exc: print("field186 failed", exc)
print("power usage mW", n.nvmlDeviceGetPowerUsage(h), "limit", n.nvmlDeviceGetPowerManagementLimit(h))
PY
echo "== ncu"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1 || true)
echo "ncu at: $NCU"; "$NCU" --version
cat > /tmp/tiny.py <<'PY'
import torch
x = torch.randn(1024, 1024, device="cuda"); torch.cuda.synchronize()
for _ in range(2): y = x @ x
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
for _ in range(3): y = x @ x
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
print("done", float(y.sum()))
PY
M=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sector_hit_rate.pct
time CUBLAS_WORKSPACE_CONFIG=:16:8 "$NCU" --replay-mode app-range --cache-control none --clock-control none --metrics $M --csv --page raw --print-units base --force-overwrite --export "$OUT/tiny" $PY /tmp/tiny.py > "$OUT/tiny.stdout" 2> "$OUT/tiny.stderr"; echo "rc=$?"
head -c 3000 "$OUT/tiny.stdout"; echo; tail -5 "$OUT/tiny.stderr"
"$NCU" --query-metrics --query-metrics-mode all --metrics dram__bytes_read,lts__t_sector_hit_rate > "$OUT/query.txt" 2>&1; echo "query rc=$?"; head -20 "$OUT/query.txt"
ls -la "$OUT"
