# config: sources and tests of this area
