// SIGINT and SIGTERM during `ferry train`: the first asks the loop to stop
// after the current update (and write a checkpoint); a second ends the
// process the default way.
#pragma once

namespace ferry {

void installStopHandlers();
// The signal that asked to stop, or 0.
int stopSignalReceived();

} // namespace ferry
