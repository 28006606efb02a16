"""Code generation: one lowering per target from the same fused plan."""
