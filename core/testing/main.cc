// The main() of every core cc_test: the test's ai3::Main() runs its checks
// and says the exit status (core/testing/reference.h).
#include "core/testing/reference.h"

int main() { return ai3::Main(); }
