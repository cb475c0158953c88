"""Names the torch dtypes that the converter's tables list and an older torch (Debian's 1.13)
lacks; a bf16 checkpoint holds none of them. Loaded by Python at start-up from to_gguf.py
--standin's path."""
import torch

for _name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
              "float4_e2m1fn_x2", "uint16", "uint32", "uint64"):
    if not hasattr(torch, _name):
        setattr(torch, _name, type(_name, (), {})())
