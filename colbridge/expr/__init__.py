"""Expressions: the IR and the user API (`col`, `lit`, `when`, operators, string parser)."""
