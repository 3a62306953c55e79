#include "formats/dequant.h"

#include "core/error.h"

namespace nextn {

void dequantize_to_f32(const RawTensor& t, float* out) {
    fail(t.file, ": tensor '", t.name, "' has type ", dtype_name(t.dtype),
         ", which cannot be dequantized yet");
}

}  // namespace nextn
