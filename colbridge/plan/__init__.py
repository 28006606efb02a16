"""Planning: typing, nullability, segments and fusion; IR in, fused plan out, nothing executed."""
