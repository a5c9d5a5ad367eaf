"""The private torch and Triton API every other module reaches through: one small function each
(:mod:`.torchapi`), and Triton's CPU interpreter mended (:mod:`.tritoncompat`). torch only inside functions."""
