"""`cmake --install` gives a package another CMake project finds: find_package(orrery) and
target_link_libraries(app orrery::orrery) build a program that maps and scores with the library."""
import os
import subprocess
from pathlib import Path

import pytest

from conftest import SOURCE_DIR


def test_a_cmake_consumer_builds_against_the_installed_package(tmp_path):
    build = os.environ.get("ORRERY_BUILD_DIR")
    if not build:
        pytest.skip("ORRERY_BUILD_DIR (the build to install) is not set")
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", build, "--prefix", str(prefix)], check=True, capture_output=True)
    for f in ["bin/orrery", "include/orrery/hssne.hpp", "include/orrery/build_info.hpp",
              "lib/cmake/orrery/orreryConfig.cmake", "share/doc/orrery/LICENSE"]:
        assert (prefix / f).exists(), f
    consumer = tmp_path / "consumer"
    subprocess.run(["cmake", "-S", str(SOURCE_DIR / "tests" / "install"), "-B", str(consumer),
                    f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release"], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(consumer), "-j", "2"], check=True, capture_output=True)
    r = subprocess.run([str(consumer / "consumer")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "trustworthiness" in r.stdout
    info = subprocess.run([str(prefix / "bin" / "orrery"), "info"], check=True, capture_output=True, text=True).stdout
    assert "orrery" in info
