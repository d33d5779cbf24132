// A RoPE kernel in standard C++17, run against a refimpl conformance suite.
//
//   python -m refimpl conformance CONFIG --dtype float32 --out SUITE
//   g++ -std=c++17 -O2 -o rope_conformance rope_conformance.cpp
//   ./rope_conformance SUITE RESULTS
//   python -m refimpl verify SUITE RESULTS
//
// For every case file SUITE/<case>.safetensors it reads the inputs q and k (F32, BF16 or F16;
// q possibly a strided view into q_buffer), the positions and inv_freq, rotates every token
//   y[a_i] = x[a_i] c - x[b_i] s,  y[b_i] = x[a_i] s + x[b_i] c,
//   c = A cos(m theta_i), s = A sin(m theta_i)  (A = attention_scaling; angles in double)
// with the pairs and slice the file's metadata names, and writes RESULTS/<case>.safetensors
// holding q_out and k_out (F32). Built with -DPLANTED_BUG it swaps the pairing (half <->
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

// ------------------------------------------------------------------ the kernel

struct Rope {
  std::string pairing, output_order;
  int64_t rotary_dim = 0, rotary_offset = 0;
  double attention_scaling = 1.0;
  std::vector<double> inv_freq;
};

// Rotate one row of D features at position m (in place into y).
static void rotate_row(const double* x, double* y, int64_t d, double m, const Rope& rope) {
  for (int64_t j = 0; j < d; ++j) y[j] = x[j];
  int64_t h = rope.rotary_dim / 2, lo = rope.rotary_offset;
  bool half = rope.pairing == "half";
#ifdef PLANTED_BUG
  half = !half;  // the planted mistake: the other pairing
#endif
  for (int64_t i = 0; i < h; ++i) {
    int64_t a = half ? i : 2 * i, b = half ? i + h : 2 * i + 1;
    int64_t oa = rope.output_order == "half" ? i : a, ob = rope.output_order == "half" ? i + h : b;
    double ang = m * rope.inv_freq[i];
    double c = rope.attention_scaling * std::cos(ang), s = rope.attention_scaling * std::sin(ang);
    double x1 = x[lo + a], x2 = x[lo + b];
    y[lo + oa] = x1 * c - x2 * s;
    y[lo + ob] = x1 * s + x2 * c;
  }
}

static std::vector<int64_t> csv(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stoll(item));
  return out;
}

// The input tensor `name`, gathered from q_buffer when the case stores q as a strided view.
static Tensor input(const SafeTensors& st, const std::string& name) {
  auto it = st.metadata.find(name + "_view_shape");
  if (it == st.metadata.end()) return st.tensors.at(name);
  Tensor t;
  t.shape = csv(it->second);
  std::vector<int64_t> strides = csv(st.metadata.at(name + "_view_strides"));
  int64_t offset = std::stoll(st.metadata.at(name + "_view_offset"));
  const auto& buf = st.tensors.at(name + "_buffer").data;
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

// Position of row `row` (an index over all but the last axis) of a tensor of `shape`.
static double position(const SafeTensors& st, const std::vector<int64_t>& shape, int64_t row) {
  const std::string& form = st.metadata.at("position_form");
  int64_t seq = shape[shape.size() - 2];
  if (form == "cu_seqlens") {  // x (T, H, D): token t = row / H
    return st.tensors.at("positions").data[static_cast<size_t>(row / seq)];
  }
  int64_t s = row % seq;
  if (form == "offsets") {  // x (B, H, S, D) with position_ids (B, S)
    int64_t b = row / (shape[1] * seq);
    return st.tensors.at("position_ids").data[static_cast<size_t>(b * seq + s)];
  }
  return st.tensors.at("positions").data[static_cast<size_t>(s)];
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
    for (const auto& file : fs::directory_iterator(suite)) {
      if (file.path().extension() != ".safetensors") continue;
      SafeTensors st = read_safetensors(file.path());
      Rope rope;
      rope.pairing = st.metadata.at("pairing");
      rope.output_order = st.metadata.at("output_order");
      rope.rotary_dim = std::stoll(st.metadata.at("rotary_dim"));
      rope.rotary_offset = std::stoll(st.metadata.at("rotary_offset"));
      rope.attention_scaling = std::stod(st.metadata.at("attention_scaling"));
      rope.inv_freq = st.tensors.at("inv_freq").data;
      std::vector<std::pair<std::string, Tensor>> out;
      for (const std::string name : {"q", "k"}) {
        Tensor x = input(st, name), y = x;
        int64_t d = x.shape.back(), rows = static_cast<int64_t>(x.data.size()) / d;
        for (int64_t r = 0; r < rows; ++r)
          rotate_row(&x.data[r * d], &y.data[r * d], d, position(st, x.shape, r), rope);
        out.emplace_back(name + "_out", std::move(y));
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
