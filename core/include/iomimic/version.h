// iomimic plugin SDK: release version of the SDK and core.
#pragma once

#define IOMIMIC_VERSION_MAJOR 0
#define IOMIMIC_VERSION_MINOR 1
#define IOMIMIC_VERSION_PATCH 0
#define IOMIMIC_VERSION_STRING "0.1.0"
