// The error every runtime part throws for a problem the user can act on (a
// damaged executable, a budget, a missing device): its message names the
// thing, the value and the fix.
#pragma once

#include <stdexcept>

namespace ferry {

class RuntimeError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace ferry
