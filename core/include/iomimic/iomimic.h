// iomimic plugin SDK: umbrella header. A plugin includes this and nothing
// else from iomimic.
#pragma once

#include "iomimic/buffer.h"
#include "iomimic/format.h"
#include "iomimic/forwarding_storage.h"
#include "iomimic/guard.h"
#include "iomimic/options.h"
#include "iomimic/plugin.h"
#include "iomimic/random.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "iomimic/version.h"
