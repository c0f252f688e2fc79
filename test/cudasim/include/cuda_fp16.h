// ferry's CUDA simulator: fp16 (see cudasim/Half.h).
#pragma once
#include "cudasim/Half.h"
