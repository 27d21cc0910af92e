// The source tests/CMakeLists.txt makes the tests' precompiled header with (kobo_test_pch).
