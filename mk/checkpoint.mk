# checkpoint: sources and tests of this area
