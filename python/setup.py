"""Builds the `clampai._clampai` extension with CMake from the source tree (the directory above
this one, or CLAMPAI_SOURCE_DIR), for the interpreter running this build.

Environment: CLAMPAI_SOURCE_DIR (the source tree), CLAMPAI_BUILD_DIR (a CMake build directory to
use and keep; default under setuptools' build_temp), CLAMPAI_CMAKE_ARGS (extra CMake arguments),
CLAMPAI_CCACHE (a ccache to use as compiler launcher; default: ccache if on PATH),
CMAKE_BUILD_PARALLEL_LEVEL (jobs; default 2).
"""

import glob
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


def source_dir() -> Path:
    root = Path(os.environ.get("CLAMPAI_SOURCE_DIR") or Path(__file__).resolve().parent.parent)
    if not (root / "CMakeLists.txt").is_file() or not (root / "kernel").is_dir():
        raise RuntimeError(f"clampai: the C++ source tree is not at {root} (set CLAMPAI_SOURCE_DIR "
                           "to the directory holding kernel/ and CMakeLists.txt)")
    return root


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        if shutil.which("cmake") is None:
            raise RuntimeError("clampai: cmake is needed to build the extension "
                               "(run scripts/setup.sh)")
        root = source_dir()
        build = Path(os.environ.get("CLAMPAI_BUILD_DIR") or Path(self.build_temp) / "cmake")
        build.mkdir(parents=True, exist_ok=True)
        args = [
            "cmake", "-S", str(root), "-B", str(build),
            "-DCMAKE_BUILD_TYPE=Release",
            "-DCLAMPAI_BUILD_PYTHON=ON",
            "-DCLAMPAI_BUILD_TESTS=OFF",
            "-DCLAMPAI_BUILD_BENCHMARKS=OFF",
            f"-DPython3_EXECUTABLE={sys.executable}",
        ]
        if shutil.which("ninja") and not (build / "CMakeCache.txt").exists():
            args += ["-G", "Ninja"]
        ccache = os.environ.get("CLAMPAI_CCACHE", shutil.which("ccache") or "")
        if ccache and not ccache.endswith("NOTFOUND"):
            args.append(f"-DCMAKE_CXX_COMPILER_LAUNCHER={ccache}")
        args += shlex.split(os.environ.get("CLAMPAI_CMAKE_ARGS", ""))
        subprocess.check_call(args)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
        subprocess.check_call(["cmake", "--build", str(build), "--target", "_clampai", "-j", jobs])
        built = glob.glob(str(build / "python" / "clampai" / "_clampai*.so"))
        if len(built) != 1:
            raise RuntimeError(f"clampai: expected one built extension, found {built}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


# With CLAMPAI_BUILD_DIR, setuptools' own build and egg-info directories go there too, so that a
# build leaves nothing in the source tree.
options = {}
if os.environ.get("CLAMPAI_BUILD_DIR"):
    base = Path(os.environ["CLAMPAI_BUILD_DIR"]) / "setuptools"
    base.mkdir(parents=True, exist_ok=True)
    options = {"build": {"build_base": str(base)}, "egg_info": {"egg_base": str(base)}}

setup(ext_modules=[CMakeExtension("clampai._clampai")], cmdclass={"build_ext": CMakeBuild},
      options=options)
