"""What is asked, before anything runs: the attention problem (:mod:`.problem`: sizes,
masks, ragged lengths), its FLOP and byte model (:mod:`.costs`), the run settings, budgets,
expectations and prices, and the quantities and TOML files they are written in. Plain
data and pure functions: no torch."""
