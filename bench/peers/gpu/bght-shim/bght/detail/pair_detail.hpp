// Shim (ours, not BGHT): the newest BGHT tree includes <bght/detail/pair_detail.hpp>, but the index holds this
// file only under the older layout include/detail/; forward to that verbatim copy (found through -I on the copy's include/).
#pragma once
#include <detail/pair_detail.hpp>
