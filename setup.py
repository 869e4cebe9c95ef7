"""Builds orrery's Python extension (orrery._core) through the project's CMake build.

`python3 -m pip install --no-build-isolation .` runs this: it configures a CMake build of the library
and the module (no tests, no benchmarks), for the interpreter that runs it, and puts the module into
the package. Offline: everything comes from Debian packages (scripts/setup.sh installs them).
Environment: ORRERY_CMAKE_ARGS adds CMake arguments (e.g. "-DORRERY_CUDA=OFF" to skip the CUDA
backend, which takes the longest to compile); CMAKE_BUILD_PARALLEL_LEVEL sets the build's jobs.
"""
import os
import shlex
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        target = Path(self.get_ext_fullpath(ext.name)).resolve()
        build = Path(self.build_temp).resolve() / "cmake"
        build.mkdir(parents=True, exist_ok=True)
        args = [
            "cmake", "-S", str(ROOT), "-B", str(build),
            "-DCMAKE_BUILD_TYPE=Release", "-DORRERY_PYTHON=ON",
            "-DORRERY_BUILD_TESTS=OFF", "-DORRERY_BUILD_BENCH=OFF",
            f"-DPython_EXECUTABLE={sys.executable}",
        ] + shlex.split(os.environ.get("ORRERY_CMAKE_ARGS", ""))
        subprocess.run(args, check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.run(["cmake", "--build", str(build), "--target", "_core", "-j", jobs], check=True)
        built = next((build / "python" / "orrery").glob("_core*.so"))
        target.parent.mkdir(parents=True, exist_ok=True)
        self.copy_file(str(built), str(target))


setup(ext_modules=[CMakeExtension("orrery._core")], cmdclass={"build_ext": CMakeBuild})
