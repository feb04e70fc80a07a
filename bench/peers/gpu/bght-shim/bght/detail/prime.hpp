// Shim (ours, not BGHT): the newest BGHT tree includes <bght/detail/prime.hpp>, but the index holds
// this file only under the older layout include/detail/prime.hpp; forward to that copy. The copy
// uses std::array / std::lower_bound / std::uint64_t without including their headers (it relied on
// the includer), so include them here first.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <detail/prime.hpp>
