# Fails unless README.md contains examples/cpp/quickstart.cpp verbatim inside a ```cpp block.
file(READ "${README}" readme)
file(READ "${SOURCE}" source)
string(FIND "${readme}" "```cpp\n${source}```" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md does not show examples/cpp/quickstart.cpp verbatim (copy it into the C++ quick start block)")
endif()
