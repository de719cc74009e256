# model: sources and tests of this area
