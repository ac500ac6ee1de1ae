#include "step/mode.h"

#include <algorithm>
#include <charconv>

#include "zpp/format.h"

namespace zpp::step {
namespace {

// narrow_ok: 2 and 3 bits are widths here (qgZ's inter-node stage, qwZ deltas).
bool ParseBits(std::string_view text, int* bits, bool narrow_ok = false) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return false;
  if (!zppBitsValid(value) || (value < 4 && !narrow_ok)) return false;
  *bits = value;
  return true;
}

bool ParseTechnique(std::string_view token, plan::Settings* s) {
  if (token == "hpz") {
    s->hpz = true;
    return true;
  }
  if (token == "ef") {
    s->qgz_ef = true;  // ParseMode moves it to the all-reduce's when only that is on
    return true;
  }
  if (token.starts_with("qar")) {
    s->qar = true;
    s->qar_bits = 8;
    return token.size() == 3 || ParseBits(token.substr(3), &s->qar_bits);
  }
  if (token.starts_with("delta")) {
    s->qwz_delta = true;
    s->qwz_delta_bits = 4;
    return token.size() == 5 || ParseBits(token.substr(5), &s->qwz_delta_bits, true);
  }
  if (token.starts_with("qwz")) {
    s->qwz = true;
    s->qwz_bits = 8;
    return token.size() == 3 || ParseBits(token.substr(3), &s->qwz_bits);
  }
  if (token.starts_with("qgz")) {
    s->qgz = true;
    s->qgz_bits_intra = 8;
    s->qgz_bits_inter = 4;
    if (token.size() == 3) return true;
    const std::string_view bits = token.substr(3);
    const size_t slash = bits.find('/');
    if (slash == std::string_view::npos) return false;
    return ParseBits(bits.substr(0, slash), &s->qgz_bits_intra) &&
           ParseBits(bits.substr(slash + 1), &s->qgz_bits_inter, true);
  }
  return false;
}

bool IsZeroPlusPlus(const plan::Settings& s) {
  return s.qwz && s.qwz_bits == 8 && s.hpz && s.qgz && s.qgz_bits_intra == 8 &&
         s.qgz_bits_inter == 4 && !s.qwz_delta && !s.qgz_ef;
}

}  // namespace

Result ParseMode(std::string_view name, plan::Settings* settings) {
  plan::Settings s = *settings;
  s.qwz = s.hpz = s.qgz = s.qwz_delta = s.qgz_ef = s.qar = s.qar_ef = false;
  if (name == "zero++") name = "qwz8+hpz+qgz8/4";
  if (name != "plain" && name != "nccl") {  // "nccl": the name before issue 29
    size_t start = 0;
    while (start <= name.size()) {
      const size_t plus = std::min(name.find('+', start), name.size());
      ZPP_CHECK_ARG(ParseTechnique(name.substr(start, plus - start), &s),
                    "mode '%.*s': expected plain, zero++, or qwz[4|8], hpz, delta[2|4|8], "
                    "qgz[<intra>/<inter>], qar[4|8], ef joined by '+' (bits 4 or 8; 2 also for "
                    "delta and qgZ's inter-node stage)",
                    static_cast<int>(name.size()), name.data());
      start = plus + 1;
    }
  }
  // Error feedback belongs to the gradients' quantized stage: qgZ's, or the all-reduce's.
  if (s.qgz_ef && s.qar) {
    s.qar_ef = true;
    s.qgz_ef = s.qgz;
  }
  *settings = s;
  return ncclSuccess;
}

std::string ModeName(const plan::Settings& s) {
  if (!s.qwz && !s.hpz && !s.qgz && !s.qwz_delta && !s.qgz_ef && !s.qar) return "plain";
  if (IsZeroPlusPlus(s)) return "zero++";
  std::string name;
  auto add = [&name](const std::string& part) { name += (name.empty() ? "" : "+") + part; };
  if (s.qwz) add("qwz" + std::to_string(s.qwz_bits));
  if (s.hpz) add("hpz");
  if (s.qwz_delta) add("delta" + std::to_string(s.qwz_delta_bits));
  if (s.qgz) add("qgz" + std::to_string(s.qgz_bits_intra) + "/" + std::to_string(s.qgz_bits_inter));
  if (s.qar) add("qar" + std::to_string(s.qar_bits));
  if (s.qgz_ef || s.qar_ef) add("ef");
  return name;
}

bool TouchesAllGather(const plan::Settings& s) { return s.qwz || s.hpz; }
bool TouchesReduceScatter(const plan::Settings& s) { return s.qgz; }
bool TouchesAllReduce(const plan::Settings& s) { return s.qar; }

std::vector<std::string> StatefulStepModes() {
  return {"qwz8+hpz+delta4+qgz8/4",
          "qwz8+hpz+delta4+qgz8/2+ef",
          "qwz8+hpz+delta4+qgz8/3+ef",
          "qwz8+hpz+delta3+qgz8/4+ef",
          "qwz8+hpz+delta2+qgz8/2+ef",
          "qwz4+hpz+qgz4/4+ef",
          "qgz8/2",
          "qgz8/2+ef"};
}

std::vector<std::string> StandardStepModes() {
  return {"plain",           "qwz8",           "qwz4", "hpz", "qwz8+hpz", "qgz8/4", "zero++",
          "qwz8+hpz+qgz8/8", "qwz4+hpz+qgz4/4"};
}

}  // namespace zpp::step
