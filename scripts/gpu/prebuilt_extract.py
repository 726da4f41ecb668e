"""Writes the NVRTC modules found in kiln disk-cache entries (scripts/gpu/prebuilt.sh's
modules.tgz, or a directory of *.kc files) as LABEL.sm_XX.cubin and LABEL.sha256 (the SHA-256
of the source it was compiled from, as `kiln_cache::digest` writes it).

Usage: python3 scripts/gpu/prebuilt_extract.py modules.tgz|DIR runtime/prebuilt

An entry (cache/src/lib.rs, `encode`): 8 bytes of magic, the lengths of the key, the PTX and
the cubin (u64, little-endian), a 32-byte checksum, then the three. The key of a module
(runtime/src/kiln_modules.rs, `cache_key`) is "kiln nvrtc module LABEL VERSION", NVRTC's
version, the driver's, "sm_XX", then "-- source" and the source.
"""
import glob
import hashlib
import io
import os
import struct
import sys
import tarfile


def entries(src):
    if os.path.isdir(src):
        for f in sorted(glob.glob(os.path.join(src, "*.kc"))):
            yield f, open(f, "rb").read()
    else:
        with tarfile.open(src) as t:
            for m in t.getmembers():
                if m.isfile() and m.name.endswith(".kc"):
                    yield m.name, t.extractfile(m).read()


MAGIC = b"KILNKC01"


def main(src, out):
    os.makedirs(out, exist_ok=True)
    seen = set()
    for name, b in entries(src):
        if b[:8] != MAGIC:
            print(f"{name}: not a kiln GPU cache entry, skipped")
            continue
        lens = struct.unpack("<3Q", b[8:32])
        at = 64
        key = b[at:at + lens[0]].decode()
        at += lens[0]
        ptx = b[at:at + lens[1]]
        at += lens[1]
        cubin = b[at:at + lens[2]]
        at += lens[2]
        if at != len(b) or not key.startswith("kiln nvrtc module "):
            print(f"{name}: not a module entry, skipped")
            continue
        if hashlib.sha256(b[64:]).digest() != b[32:64]:
            sys.exit(f"{name}: checksum mismatch")
        head, source = key.split("\n-- source\n", 1)
        label = head.split()[3]
        sm = [l for l in head.splitlines() if l.startswith("sm_")][0]
        if not cubin:
            print(f"{name}: {label} has PTX only ({len(ptx)} bytes), skipped")
            continue
        if (label, sm) in seen:
            sys.exit(f"{name}: a second entry of {label} {sm}")
        seen.add((label, sm))
        with open(os.path.join(out, f"{label}.sha256"), "w") as f:
            f.write(hashlib.sha256(source.encode("utf-8")).hexdigest() + "\n")
        with open(os.path.join(out, f"{label}.{sm}.cubin"), "wb") as f:
            f.write(cubin)
        print(f"{label}: {sm}, source {len(source)} chars, cubin {len(cubin)} bytes ({head.splitlines()[1]})")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
