// libFuzzer target: config.json text through the Hugging Face config reader (JSON parse,
// field types, ranges, validation). A clean nextn::Error is the expected answer; anything else
// is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "formats/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        nextn::ModelConfig c = nextn::parse_hf_config_text(
            std::string_view(reinterpret_cast<const char*>(data), size), "fuzz/config.json");
        // The derived sizes the model allocates from must be computable without overflow.
        volatile int64_t sink = c.gdn_conv_dim() + c.hidden_size * c.n_layers;
        (void)sink;
    } catch (const nextn::Error&) {
        // A clear error is the right answer to a corrupt config.
    }
    return 0;
}
