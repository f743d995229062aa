// The one source of revkv_pch and revkv_test_pch, the targets that build the precompiled headers
// (cmake/RevkvTarget.cmake): they compile nothing of their own.
