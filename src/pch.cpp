// Translation unit that carries the shared precompiled header (see src/CMakeLists.txt).
