#!/usr/bin/env python3
"""Fetches NVIDIA's ptxas (wheel nvidia-cuda-nvcc==13.0.88) and libdevice (wheel nvidia-nvvm
13.0.x) from PyPI into a folder, without pip: kiln's tests assemble every generated PTX kernel
with ptxas for sm_90, and kernels calling math functions link libdevice. Neither is committed
(CUDA EULA); both are fetched at set-up.

Usage: fetch_cuda_tools.py DEST   (writes DEST/bin/ptxas and DEST/nvvm/libdevice/libdevice.10.bc)
"""
import io, json, os, stat, sys, urllib.parse, urllib.request, zipfile

WANTED = [
    # (package, version prefix, member suffix in the wheel, destination)
    ("nvidia-cuda-nvcc", "13.0.88", "/bin/ptxas", "bin/ptxas"),
    ("nvidia-nvvm", "13.0.", "/nvvm/libdevice/libdevice.10.bc", "nvvm/libdevice/libdevice.10.bc"),
]


def wheel_url(package, prefix):
    index = f"https://pypi.org/pypi/{package}/json"
    with urllib.request.urlopen(index, timeout=60) as r:
        releases = json.load(r)["releases"]
    versions = sorted((v for v in releases if v.startswith(prefix)), key=lambda v: [int(p) for p in v.split(".") if p.isdigit()])
    for v in reversed(versions):
        for f in releases[v]:
            if f["filename"].endswith(".whl") and "x86_64" in f["filename"] and "linux" in f["filename"]:
                return v, urllib.parse.urljoin(index, f["url"])
    raise SystemExit(f"no linux x86_64 wheel of {package} {prefix}*")


def main():
    dest = sys.argv[1]
    for package, prefix, member, target in WANTED:
        out = os.path.join(dest, target)
        if os.path.exists(out):
            continue
        version, url = wheel_url(package, prefix)
        print(f"fetching {package} {version}", flush=True)
        with urllib.request.urlopen(url, timeout=600) as r:
            wheel = zipfile.ZipFile(io.BytesIO(r.read()))
        names = [n for n in wheel.namelist() if n.endswith(member)]
        if not names:
            raise SystemExit(f"{package} {version}: no {member} in the wheel")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out + ".tmp", "wb") as f:
            f.write(wheel.read(names[0]))
        os.replace(out + ".tmp", out)
        if target.startswith("bin/"):
            os.chmod(out, os.stat(out).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


if __name__ == "__main__":
    main()
