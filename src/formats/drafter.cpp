#include "formats/drafter.h"

#include "core/error.h"

namespace nextn {

void attach_drafter(Checkpoint& target, const std::string& path) {
    fail(path, ": separate MTP drafters are not supported yet");
}

}  // namespace nextn
