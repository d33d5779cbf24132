// A RoPE kernel in standard C++17, run against a refimpl conformance suite.
//
//   python -m refimpl conformance CONFIG --dtype float32 --out SUITE
//   g++ -std=c++17 -O2 -o rope_conformance rope_conformance.cpp
//   ./rope_conformance SUITE RESULTS
//   python -m refimpl verify SUITE RESULTS
//
// The suite is in the format refimpl-conformance/2 (book page "Suite format"). For every
// inputs file SUITE/inputs/<case>.safetensors it reads the tensors the file's metadata names
// (F32, BF16 or F16; a strided view gathered from its buffer), the positions in the case's
// form (positions, offsets, position_ids, cu_seqlens, M-RoPE position ids or a cos_sin_cache)
// and inv_freq, rotates every token
//   y[a_i] = x[a_i] c - x[b_i] s,  y[b_i] = x[a_i] s + x[b_i] c,
//   c = A cos(m theta_i), s = A sin(m theta_i)  (A = attention_scaling; angles in double)
// with the pairs and slice the metadata names, and writes RESULTS/<case>.safetensors holding
// the outputs under the names of the metadata's "outputs" (F32). It reads nothing else: no
// manifest, no expected outputs. Built with -DPLANTED_BUG it swaps the pairing (half <->
// interleaved): the verifier must fail that build and name the mistake.
//
// The safetensors reader and writer below are this example's own (the format: an 8-byte
// little-endian header length N, N bytes of JSON, then the raw little-endian data).

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace fs = std::filesystem;

// ------------------------------------------------------------------ a minimal JSON reader

struct Json {
  enum Kind { Null, Number, String, Array, Object } kind = Null;
  double number = 0;
  std::string text;
  std::vector<Json> items;
  std::map<std::string, Json> fields;
  const Json& at(const std::string& key) const {
    auto it = fields.find(key);
    if (it == fields.end()) throw std::runtime_error("missing key " + key);
    return it->second;
  }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  Json parse() {
    Json v = value();
    return v;
  }

 private:
  const std::string& s_;
  size_t i_ = 0;
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  char peek() {
    ws();
    if (i_ >= s_.size()) throw std::runtime_error("unexpected end of JSON");
    return s_[i_];
  }
  void expect(char c) {
    if (peek() != c) throw std::runtime_error(std::string("JSON: expected ") + c);
    ++i_;
  }
  std::string str() {
    expect('"');
    std::string out;
    while (s_.at(i_) != '"') {
      if (s_[i_] == '\\') ++i_;  // keys and values here hold no escapes beyond \" and \\.
      out += s_.at(i_++);
    }
    ++i_;
    return out;
  }
  Json value() {
    Json v;
    char c = peek();
    if (c == '{') {
      v.kind = Json::Object;
      ++i_;
      if (peek() == '}') { ++i_; return v; }
      while (true) {
        std::string key = str();
        expect(':');
        v.fields[key] = value();
        if (peek() == ',') { ++i_; continue; }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = Json::Array;
      ++i_;
      if (peek() == ']') { ++i_; return v; }
      while (true) {
        v.items.push_back(value());
        if (peek() == ',') { ++i_; continue; }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = Json::String;
      v.text = str();
      return v;
    }
    if (s_.compare(i_, 4, "null") == 0) { i_ += 4; return v; }
    size_t end = i_;
    while (end < s_.size() && std::strchr("+-.eE0123456789", s_[end])) ++end;
    v.kind = Json::Number;
    v.number = std::stod(s_.substr(i_, end - i_));
    i_ = end;
    return v;
  }
};

// ------------------------------------------------------------------ safetensors

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;  // every dtype widened exactly to double
};

static double half_to_double(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  double v;
  if (exp == 0) v = std::ldexp(mant, -24);                       // subnormal
  else if (exp == 31) v = mant ? NAN : INFINITY;
  else v = std::ldexp(mant + 1024, exp - 25);
  return sign ? -v : v;
}

struct SafeTensors {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

static SafeTensors read_safetensors(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path.string());
  uint64_t n = 0;
  unsigned char len[8];
  f.read(reinterpret_cast<char*>(len), 8);
  for (int b = 7; b >= 0; --b) n = (n << 8) | len[b];
  std::string header(n, ' ');
  f.read(header.data(), static_cast<std::streamsize>(n));
  std::vector<char> blob((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  Json h = JsonParser(header).parse();
  SafeTensors st;
  for (const auto& [name, info] : h.fields) {
    if (name == "__metadata__") {
      for (const auto& [k, v] : info.fields) st.metadata[k] = v.text;
      continue;
    }
    Tensor t;
    int64_t count = 1;
    for (const auto& d : info.at("shape").items) {
      t.shape.push_back(static_cast<int64_t>(d.number));
      count *= t.shape.back();
    }
    size_t off = static_cast<size_t>(info.at("data_offsets").items.at(0).number);
    const std::string& dt = info.at("dtype").text;
    const char* p = blob.data() + off;
    t.data.resize(static_cast<size_t>(count));
    for (int64_t j = 0; j < count; ++j) {
      if (dt == "F64") { double v; std::memcpy(&v, p + 8 * j, 8); t.data[j] = v; }
      else if (dt == "F32") { float v; std::memcpy(&v, p + 4 * j, 4); t.data[j] = v; }
      else if (dt == "I64") { int64_t v; std::memcpy(&v, p + 8 * j, 8); t.data[j] = double(v); }
      else if (dt == "I32") { int32_t v; std::memcpy(&v, p + 4 * j, 4); t.data[j] = v; }
      else if (dt == "F16") { uint16_t v; std::memcpy(&v, p + 2 * j, 2); t.data[j] = half_to_double(v); }
      else if (dt == "BF16") {
        uint16_t v; std::memcpy(&v, p + 2 * j, 2);
        uint32_t bits = uint32_t(v) << 16; float x; std::memcpy(&x, &bits, 4); t.data[j] = x;
      } else throw std::runtime_error("unsupported dtype " + dt);
    }
    st.tensors[name] = std::move(t);
  }
  return st;
}

static void write_safetensors(const fs::path& path,
                              const std::vector<std::pair<std::string, Tensor>>& tensors) {
  std::ostringstream header;
  header << "{";
  size_t offset = 0;
  for (size_t j = 0; j < tensors.size(); ++j) {
    const auto& [name, t] = tensors[j];
    header << (j ? "," : "") << "\"" << name << "\":{\"dtype\":\"F32\",\"shape\":[";
    for (size_t d = 0; d < t.shape.size(); ++d) header << (d ? "," : "") << t.shape[d];
    header << "],\"data_offsets\":[" << offset << "," << offset + 4 * t.data.size() << "]}";
    offset += 4 * t.data.size();
  }
  header << "}";
  std::string text = header.str();
  while (text.size() % 8) text += ' ';
  std::ofstream f(path, std::ios::binary);
  uint64_t n = text.size();
  for (int b = 0; b < 8; ++b) f.put(static_cast<char>((n >> (8 * b)) & 0xFF));
  f << text;
  for (const auto& [name, t] : tensors)
    for (double v : t.data) { float x = static_cast<float>(v); f.write(reinterpret_cast<char*>(&x), 4); }
}

// ------------------------------------------------------------------ the case's metadata

struct Case {
  std::string layout, form, pairing, output_order, mrope_layout;
  int64_t dim = 0, rotary_dim = 0, rotary_offset = 0;
  double attention_scaling = 1.0;
  std::vector<int64_t> mrope_section;
  std::map<std::string, int64_t> heads;  // t(qkv): heads of q, k and v
};

static std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  return out;
}

static std::vector<int64_t> csv(const std::string& s) {
  std::vector<int64_t> out;
  for (const auto& item : split(s, ',')) out.push_back(std::stoll(item));
  return out;
}

static std::string meta_or(const SafeTensors& st, const std::string& key, const std::string& d) {
  auto it = st.metadata.find(key);
  return it == st.metadata.end() ? d : it->second;
}

static Case read_case(const SafeTensors& st) {
  Case c;
  c.layout = st.metadata.at("layout");
  c.form = st.metadata.at("position_form");
  c.pairing = st.metadata.at("pairing");
  c.output_order = st.metadata.at("output_order");
  c.dim = std::stoll(st.metadata.at("dim"));
  c.rotary_dim = std::stoll(st.metadata.at("rotary_dim"));
  c.rotary_offset = std::stoll(st.metadata.at("rotary_offset"));
  c.attention_scaling = std::stod(st.metadata.at("attention_scaling"));
  std::string sections = meta_or(st, "mrope_section", "");
  if (!sections.empty()) {
    c.mrope_section = csv(sections);
    c.mrope_layout = st.metadata.at("mrope_layout");
  }
  for (const auto& kv : split(meta_or(st, "heads", ""), ','))
    if (!kv.empty()) c.heads[split(kv, ':')[0]] = std::stoll(split(kv, ':')[1]);
  return c;
}

// The input tensor `name`, gathered from its buffer when the case stores it as a strided view
// (<name>_view_buffer, _offset, _shape, _strides; offset and strides in elements).
static Tensor input(const SafeTensors& st, const std::string& name) {
  auto it = st.metadata.find(name + "_view_buffer");
  if (it == st.metadata.end()) return st.tensors.at(name);
  Tensor t;
  t.shape = csv(st.metadata.at(name + "_view_shape"));
  std::vector<int64_t> strides = csv(st.metadata.at(name + "_view_strides"));
  int64_t offset = std::stoll(st.metadata.at(name + "_view_offset"));
  const auto& buf = st.tensors.at(it->second).data;
  int64_t count = 1;
  for (auto n : t.shape) count *= n;
  t.data.resize(static_cast<size_t>(count));
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t rem = flat, at = offset;
    for (int64_t d = static_cast<int64_t>(t.shape.size()) - 1; d >= 0; --d) {
      at += (rem % t.shape[d]) * strides[d];
      rem /= t.shape[d];
    }
    t.data[flat] = buf[static_cast<size_t>(at)];
  }
  return t;
}

// Which row of the M-RoPE position ids drives pair j (blocked, interleaved or imrope sections).
static int64_t mrope_axis(const Case& c, int64_t j) {
  const auto& sec = c.mrope_section;
  if (c.mrope_layout == "blocked") {
    int64_t end = 0;
    for (size_t a = 0; a < sec.size(); ++a)
      if (j < (end += sec[a])) return static_cast<int64_t>(a);
  }
  if (c.mrope_layout == "imrope") {
    for (int64_t a = 0; a < 3; ++a)
      if (j % 3 == a && j < 3 * sec[a]) return a;
    return 3;
  }
  if (j % 3 == 1 && j < 3 * sec[1]) return 1;  // interleaved (Qwen3-VL)
  if (j % 3 == 2 && j < 3 * sec[2]) return 2;
  return 0;
}

// Position of pair j of the row with multi-index idx (shape: the heads layout, without D).
static double position(const SafeTensors& st, const Case& c, const std::vector<int64_t>& shape,
                       const std::vector<int64_t>& idx, int64_t j) {
  int64_t s_axis = c.layout == "bhsd" ? 2 : (c.layout == "bshd" ? 1 : 0);
  int64_t s = idx[s_axis], seq = shape[s_axis];
  auto at = [&](const std::string& name, int64_t k) {
    return st.tensors.at(name).data[static_cast<size_t>(k)];
  };
  if (c.form == "offsets") return at("offsets", idx[0]) + s;
  if (c.form == "position_ids") return at("position_ids", idx[0] * seq + s);
  if (c.form == "cu_seqlens") {  // t - cu_seqlens[i] + offsets[i]
    const auto& cu = st.tensors.at("cu_seqlens").data;
    size_t i = 0;
    while (cu[i + 1] <= s) ++i;
    return s - cu[i] + at("offsets", static_cast<int64_t>(i));
  }
  if (c.form == "mrope") return at("position_ids", mrope_axis(c, j) * seq + s);
  double p = at("positions", s);  // "positions" and "cache"
  if (!c.mrope_section.empty() && c.mrope_layout == "imrope" && mrope_axis(c, j) == 3) p = 0;
  return p;
}

// ------------------------------------------------------------------ the kernel

// Rotate one row of D features (in place into y); pair j at position pos[j] (or cache rows).
static void rotate_row(const double* x, double* y, const Case& c, const std::vector<double>& pos,
                       const std::vector<double>& inv_freq, const Tensor* cache) {
  int64_t d = c.dim, h = c.rotary_dim / 2, lo = c.rotary_offset;
  for (int64_t j = 0; j < d; ++j) y[j] = x[j];
  bool half = c.pairing == "half";
#ifdef PLANTED_BUG
  half = !half;  // the planted mistake: the other pairing
#endif
  for (int64_t i = 0; i < h; ++i) {
    int64_t a = half ? i : 2 * i, b = half ? i + h : 2 * i + 1;
    int64_t oa = c.output_order == "half" ? i : a, ob = c.output_order == "half" ? i + h : b;
    double cs, sn;
    if (cache != nullptr) {  // [cos | sin] rows, already times the attention factor
      size_t row = static_cast<size_t>(pos[i]) * static_cast<size_t>(2 * h);
      cs = cache->data[row + i];
      sn = cache->data[row + h + i];
    } else {
      double ang = pos[i] * inv_freq[i];
      cs = c.attention_scaling * std::cos(ang);
      sn = c.attention_scaling * std::sin(ang);
    }
    double x1 = x[lo + a], x2 = x[lo + b];
    y[lo + oa] = x1 * cs - x2 * sn;
    y[lo + ob] = x1 * sn + x2 * cs;
  }
}

// One output: the input `src` in heads (..., D), every row rotated (v heads of qkv copied).
static Tensor run_output(const SafeTensors& st, const Case& c, const std::string& src) {
  Tensor x = input(st, src), y = x;
  std::vector<int64_t> shape(x.shape.begin(), x.shape.end() - 1);
  if (c.layout == "t(hd)" || c.layout == "t(qkv)")  // (T, H*D) read as (T, H, D)
    shape = {x.shape[0], x.shape[1] / c.dim};
  const Tensor* cache = c.form == "cache" ? &st.tensors.at("cos_sin_cache") : nullptr;
  const std::vector<double>& inv_freq = st.tensors.at("inv_freq").data;
  int64_t rows = static_cast<int64_t>(x.data.size()) / c.dim;
  std::vector<int64_t> idx(shape.size());
  std::vector<double> pos(static_cast<size_t>(c.rotary_dim / 2));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = static_cast<int64_t>(shape.size()) - 1, rem = r; k >= 0; --k) {
      idx[k] = rem % shape[k];
      rem /= shape[k];
    }
    if (c.layout == "t(qkv)" && idx[1] >= c.heads.at("q") + c.heads.at("k")) continue;  // v
    for (size_t j = 0; j < pos.size(); ++j)
      pos[j] = position(st, c, shape, idx, static_cast<int64_t>(j));
    rotate_row(&x.data[r * c.dim], &y.data[r * c.dim], c, pos, inv_freq, cache);
  }
  return y;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: rope_conformance SUITE_DIR RESULTS_DIR\n";
    return 2;
  }
  fs::path suite(argv[1]), results(argv[2]);
  int n = 0;
  try {
    fs::create_directories(results);
    for (const auto& file : fs::directory_iterator(suite / "inputs")) {
      if (file.path().extension() != ".safetensors") continue;
      SafeTensors st = read_safetensors(file.path());
      Case c = read_case(st);
      std::vector<std::pair<std::string, Tensor>> out;
      for (const auto& pair : split(st.metadata.at("outputs"), ',')) {  // "name:source"
        auto parts = split(pair, ':');
        out.emplace_back(parts[0], run_output(st, c, parts[1]));
      }
      write_safetensors(results / file.path().filename(), out);
      ++n;
    }
  } catch (const std::exception& e) {
    std::cerr << "rope_conformance: " << e.what() << "\n";
    return 2;
  }
  std::cout << "wrote " << n << " result files to " << results << "\n";
  return 0;
}
