// The report pages' resources, compiled in by CMake (core/CMakeLists.txt,
// cmake/embed_resources.cmake): the page template (report_template.html)
// and the charting library found at build time (IOMIMIC_CHART_JS; empty
// when none was found).

#pragma once

#include <cstddef>

namespace iomimic::analysis {

extern const unsigned char kReportTemplate[];
extern const std::size_t kReportTemplateSize;
extern const unsigned char kChartJs[];
extern const std::size_t kChartJsSize;
extern const char kChartJsPath[];  // where the build read it ("" when not found)

}  // namespace iomimic::analysis
