# plugin: sources and tests of this area
