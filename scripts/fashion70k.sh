#!/usr/bin/env bash
# Gathers all 70,000 Fashion-MNIST images (training set, then test set; Debian's dataset-fashion-mnist)
# into DIR/images.npy (float32, pixels / 255), DIR/labels.txt and DIR/names.txt ("train 0" ..
# "test 9999"), for the 70,000-image benchmarks. Does nothing when DIR/images.npy exists.
# Usage: bash scripts/fashion70k.sh [DIR]   (default data/fashion70k, git-ignored)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-data/fashion70k}
[ -f "$dir/images.npy" ] && [ -f "$dir/names.txt" ] && exit 0
mkdir -p "$dir"
/usr/bin/python3 - "$dir" <<'PY'
import gzip, sys
import numpy as np
src, dst = "/usr/share/datasets/fashion-mnist/", sys.argv[1]
def read(name, offset):
    with gzip.open(src + name) as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)
images = np.concatenate([read("train-images-idx3-ubyte.gz", 16), read("t10k-images-idx3-ubyte.gz", 16)])
labels = np.concatenate([read("train-labels-idx1-ubyte.gz", 8), read("t10k-labels-idx1-ubyte.gz", 8)])
np.save(dst + "/images.npy", (images.reshape(-1, 784) / 255.0).astype(np.float32))
np.savetxt(dst + "/labels.txt", labels, fmt="%d")
with open(dst + "/names.txt", "w") as f:
    f.writelines([f"train {i}\n" for i in range(60000)] + [f"test {i}\n" for i in range(10000)])
PY
