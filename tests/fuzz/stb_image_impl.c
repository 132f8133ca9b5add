/* stb_image's implementation compiled into fuzz_image_decode with the fuzz build's coverage and
   sanitizers: its definitions take the place of Debian's uninstrumented libstb.so, so that
   libFuzzer sees inside the decoders and AddressSanitizer checks their memory accesses. */
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>
