"""The H200's copy speed (GB/s) from bench/device.toml, the one place it is written."""
from pathlib import Path

DEVICE_TOML = Path(__file__).resolve().parent.parent / "device.toml"


def copy_gbps():
    for line in DEVICE_TOML.read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "h200_copy_gbps":
            return float(value)
    raise SystemExit(f"{DEVICE_TOML}: no `h200_copy_gbps = <GB/s>` line")


COPY_GBPS = copy_gbps()
