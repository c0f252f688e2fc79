// ferry's CUDA simulator: bf16 (see cudasim/Half.h).
#pragma once
#include "cudasim/Half.h"
