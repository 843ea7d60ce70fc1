# The Python tests (pytest + hypothesis, Debian's python3-pytest and python3-hypothesis), run
# with the interpreter the bindings are built for, importing the package from the build tree.
execute_process(COMMAND ${Python3_EXECUTABLE} -c "import pytest, hypothesis"
                RESULT_VARIABLE _clampai_pytest_missing OUTPUT_QUIET ERROR_QUIET)
if(_clampai_pytest_missing)
  message(WARNING "clampai: ${Python3_EXECUTABLE} lacks pytest or hypothesis "
                  "(apt-get install python3-pytest python3-hypothesis): the Python tests are skipped")
  return()
endif()
set(_clampai_py_env
  PYTHONPATH=${CLAMPAI_PYTHON_DIR}
  CLAMPAI_SOURCE_DIR=${PROJECT_SOURCE_DIR}
  PYTHONDONTWRITEBYTECODE=1
  CLAMPAI_CLI=$<TARGET_FILE:clampai>)
# In an AddressSanitizer build the extension needs the sanitizer's runtime loaded first, in an
# interpreter that was not built with it: preloaded (scripts/python-asan.sh), with libstdc++
# (which the interpreter does not link: without it ASan cannot intercept the first C++ throw
# and aborts). Leaks are not reported: CPython itself leaves memory allocated at exit.
if(CLAMPAI_SANITIZE MATCHES "address")
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    message(WARNING "clampai: the Python tests of a sanitized build need GCC's libasan: skipped")
    return()
  endif()
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libasan.so
                  OUTPUT_VARIABLE _clampai_libasan OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so
                  OUTPUT_VARIABLE _clampai_libstdcxx OUTPUT_STRIP_TRAILING_WHITESPACE)
  list(APPEND _clampai_py_env
    "LD_PRELOAD=${_clampai_libasan} ${_clampai_libstdcxx}"
    ASAN_OPTIONS=detect_leaks=0
    UBSAN_OPTIONS=print_stacktrace=1)
elseif(CLAMPAI_SANITIZE)
  return()  # ThreadSanitizer: CPython would need to be built with it
endif()
add_test(NAME python_tests
  COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_LIST_DIR}
          --ignore=${CMAKE_CURRENT_LIST_DIR}/test_pip_install.py)
set_tests_properties(python_tests PROPERTIES ENVIRONMENT "${_clampai_py_env}" TIMEOUT 600)
if(CLAMPAI_SANITIZE)
  return()  # the pip install builds an unsanitized extension: the Release stage runs it
endif()
# The tests that need a PostgreSQL server (they skip without DATABASE_URL in python_tests), on
# a throwaway cluster (scripts/with-postgres.sh), when PostgreSQL's server binaries are there.
# Not in a sanitized build: its LD_PRELOAD would reach the server's programs too.
file(GLOB _clampai_pg_initdb /usr/lib/postgresql/*/bin/initdb)
if(_clampai_pg_initdb)
  add_test(NAME python_tests_postgres
    COMMAND ${PROJECT_SOURCE_DIR}/scripts/with-postgres.sh
            ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider
            ${CMAKE_CURRENT_LIST_DIR}/test_shared_budget_postgres.py)
  set_tests_properties(python_tests_postgres PROPERTIES ENVIRONMENT "${_clampai_py_env}"
    TIMEOUT 300 LABELS postgres)
endif()

# `pip install --no-build-isolation --no-index ./python` into a fresh venv (with the system's
# site-packages), from the source tree: the setuptools backend configures and builds the
# extension with CMake. Its CMake build directory, <build>-pip, is kept between runs, and sits
# beside this build directory (at the same depth) so that ccache, when present, finds this
# build's objects under the same relative paths: then even a first run mostly links.
execute_process(COMMAND ${Python3_EXECUTABLE} -c "import venv, ensurepip, setuptools"
                RESULT_VARIABLE _clampai_venv_missing OUTPUT_QUIET ERROR_QUIET)
if(_clampai_venv_missing)
  message(WARNING "clampai: ${Python3_EXECUTABLE} cannot make a venv with pip "
                  "(apt-get install python3-venv python3-setuptools): python_pip_install is skipped")
  return()
endif()
find_program(CLAMPAI_CCACHE ccache)
add_test(NAME python_pip_install
  COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider
          ${CMAKE_CURRENT_LIST_DIR}/test_pip_install.py)
set_tests_properties(python_pip_install PROPERTIES
  ENVIRONMENT "${_clampai_py_env};CLAMPAI_PIP_BUILD_DIR=${CMAKE_BINARY_DIR}-pip;CLAMPAI_PIP_VENV=${CMAKE_BINARY_DIR}/python-venv;CLAMPAI_CCACHE=${CLAMPAI_CCACHE};CLAMPAI_PIP_CMAKE_ARGS=-DCLAMPAI_WERROR=${CLAMPAI_WERROR}"
  TIMEOUT 1800)
