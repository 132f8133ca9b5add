// MATLAB names that dltrain does not have: trainingOptions arguments and imageDatastore
// properties with no counterpart here. An unknown key on these lists gets one line saying so
// (unknown_key_message) instead of a did-you-mean; docs/matlab.md lists the same names.
#include <algorithm>
#include <string>
#include <vector>

#include "config/fields.h"

namespace dlt::cfg {

namespace {

struct MatlabNames {
  const char* what;    // unknown_key_message's `what`
  const char* prefix;  // the section, to qualify the key
  const char* kind;    // what MATLAB calls them
  std::vector<std::string> names;
};

const std::vector<MatlabNames>& tables() {
  static const std::vector<MatlabNames> t = {
      {"training option",
       "training",
       "option",
       {// normalization, hardware and data formats
        "Acceleration", "PreprocessingEnvironment", "InputDataFormats", "TargetDataFormats",
        // the L-BFGS solver
        "MaxIterations", "LineSearchMethod", "MaxNumLineSearchIterations", "HistorySize", "InitialInverseHessianFactor",
        "GradientTolerance", "StepTolerance",
        // the Levenberg-Marquardt solver
        "InitialDampingFactor", "MaxDampingFactor", "DampingIncreaseFactor", "DampingDecreaseFactor"}},
      {"data key", "data", "imageDatastore property", {"ReadFcn", "ReadSize", "AlternateFileSystemRoots"}},
  };
  return t;
}

}  // namespace

std::string matlab_only_message(const std::string& what, const std::string& key) {
  for (const MatlabNames& t : tables())
    if (what == t.what && std::find(t.names.begin(), t.names.end(), key) != t.names.end())
      return std::string(t.prefix) + "." + key + " is a MATLAB " + t.kind +
             " dltrain does not have (remove it; docs/matlab.md lists them)";
  return "";
}

}  // namespace dlt::cfg
