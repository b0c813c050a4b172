// test_disabled_cpp.cpp: the compiled-out instrumentation in C++, linked without libstrobe.
#define STROBE_ENABLED 0
#include "use_all_macros.h"

int main() {
    return use_all_macros(4) == 6 ? 0 : 1;
}
