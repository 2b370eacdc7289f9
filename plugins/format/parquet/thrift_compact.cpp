#include "thrift_compact.h"

namespace iomimic::parquet::thrift {

void Writer::Varint(std::uint64_t v) {
  while (v >= 0x80) {
    Put(static_cast<std::uint8_t>(v | 0x80));
    v >>= 7;
  }
  Put(static_cast<std::uint8_t>(v));
}

void Writer::FieldHeader(std::int16_t field, Type type) {
  const int delta = field - last_;
  if (delta > 0 && delta <= 15) {
    Put(static_cast<std::uint8_t>((delta << 4) | type));
  } else {
    Put(type);
    Varint(ZigZag(field));
  }
  last_ = field;
}

void Writer::I16(std::int16_t field, std::int16_t v) {
  FieldHeader(field, kI16);
  Varint(ZigZag(v));
}

void Writer::I32(std::int16_t field, std::int32_t v) {
  FieldHeader(field, kI32);
  Varint(ZigZag(v));
}

void Writer::I64(std::int16_t field, std::int64_t v) {
  FieldHeader(field, kI64);
  Varint(ZigZag(v));
}

void Writer::Bool(std::int16_t field, bool v) { FieldHeader(field, v ? kTrue : kFalse); }

void Writer::Byte(std::int16_t field, std::int8_t v) {
  FieldHeader(field, kByte);
  Put(static_cast<std::uint8_t>(v));
}

void Writer::String(std::int16_t field, std::string_view v) {
  FieldHeader(field, kBinary);
  ListString(v);
}

void Writer::ListString(std::string_view v) {
  Varint(v.size());
  for (char c : v) Put(static_cast<std::uint8_t>(c));
}

void Writer::BeginStructField(std::int16_t field) {
  FieldHeader(field, kStruct);
  BeginStruct();
}

void Writer::BeginStruct() {
  stack_.push_back(last_);
  last_ = 0;
}

void Writer::EndStruct() {
  Put(kStop);
  last_ = stack_.empty() ? 0 : stack_.back();
  if (!stack_.empty()) stack_.pop_back();
}

void Writer::BeginList(std::int16_t field, Type element, std::size_t size) {
  FieldHeader(field, kList);
  if (size < 15) {
    Put(static_cast<std::uint8_t>((size << 4) | element));
  } else {
    Put(static_cast<std::uint8_t>(0xF0 | element));
    Varint(size);
  }
}

bool Reader::Varint(std::uint64_t* v) {
  std::uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= size_) return false;
    const auto b = static_cast<std::uint8_t>(data_[pos_++]);
    result |= static_cast<std::uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

bool Reader::Field(std::int16_t* id, Type* type) {
  if (pos_ >= size_) return false;
  const auto b = static_cast<std::uint8_t>(data_[pos_++]);
  *type = static_cast<Type>(b & 0x0F);
  if (*type == kStop) {
    *id = 0;
    return true;
  }
  const int delta = b >> 4;
  if (delta != 0) {
    *id = static_cast<std::int16_t>(last_ + delta);
  } else {
    std::uint64_t z = 0;
    if (!Varint(&z)) return false;
    *id = static_cast<std::int16_t>(static_cast<std::int64_t>(z >> 1) ^
                                    -static_cast<std::int64_t>(z & 1));
  }
  last_ = *id;
  return true;
}

bool Reader::I64(std::int64_t* v) {
  std::uint64_t z = 0;
  if (!Varint(&z)) return false;
  *v = static_cast<std::int64_t>(z >> 1) ^ -static_cast<std::int64_t>(z & 1);
  return true;
}

bool Reader::I32(std::int32_t* v) {
  std::int64_t wide = 0;
  if (!I64(&wide) || wide < INT32_MIN || wide > INT32_MAX) return false;
  *v = static_cast<std::int32_t>(wide);
  return true;
}

bool Reader::Byte(std::int8_t* v) {
  if (pos_ >= size_) return false;
  *v = static_cast<std::int8_t>(data_[pos_++]);
  return true;
}

bool Reader::String(std::string* v) {
  std::uint64_t n = 0;
  if (!Varint(&n) || n > size_ - pos_) return false;
  v->assign(reinterpret_cast<const char*>(data_ + pos_), static_cast<std::size_t>(n));
  pos_ += static_cast<std::size_t>(n);
  return true;
}

bool Reader::ListHeader(Type* element, std::size_t* size) {
  if (pos_ >= size_) return false;
  const auto b = static_cast<std::uint8_t>(data_[pos_++]);
  *element = static_cast<Type>(b & 0x0F);
  std::uint64_t n = b >> 4;
  if (n == 15 && !Varint(&n)) return false;
  if (n > size_) return false;  // every element takes at least one byte
  *size = static_cast<std::size_t>(n);
  return true;
}

void Reader::EnterStruct() {
  stack_.push_back(last_);
  last_ = 0;
}

void Reader::LeaveStruct() {
  last_ = stack_.empty() ? 0 : stack_.back();
  if (!stack_.empty()) stack_.pop_back();
}

bool Reader::Skip(Type type, int depth) {
  if (depth > 32) return false;
  std::uint64_t scratch = 0;
  switch (type) {
    case kTrue:
    case kFalse:
      return true;
    case kByte:
      if (pos_ >= size_) return false;
      ++pos_;
      return true;
    case kI16:
    case kI32:
    case kI64:
      return Varint(&scratch);
    case kDouble:
      if (size_ - pos_ < 8) return false;
      pos_ += 8;
      return true;
    case kBinary:
      if (!Varint(&scratch) || scratch > size_ - pos_) return false;
      pos_ += static_cast<std::size_t>(scratch);
      return true;
    case kList:
    case kSet: {
      Type element;
      std::size_t n = 0;
      if (!ListHeader(&element, &n)) return false;
      for (std::size_t i = 0; i < n; ++i) {
        if (element == kTrue || element == kFalse) {
          if (pos_ >= size_) return false;
          ++pos_;  // a boolean element is a whole byte
        } else if (!Skip(element, depth + 1)) {
          return false;
        }
      }
      return true;
    }
    case kMap: {
      if (!Varint(&scratch)) return false;
      if (scratch == 0) return true;
      if (pos_ >= size_) return false;
      const auto kv = static_cast<std::uint8_t>(data_[pos_++]);
      // Every key and value takes at least one byte (a boolean one too, as
      // in a list): a count the rest of the buffer cannot hold is corrupt.
      // Skipping booleans as zero bytes let a 205-byte footer claiming 2^60
      // boolean pairs spin for ever (found by tests/fuzz, docs/fuzzing.md).
      if (scratch > size_ - pos_) return false;
      auto skip_element = [&](Type element) {
        if (element == kTrue || element == kFalse) {
          if (pos_ >= size_) return false;
          ++pos_;
          return true;
        }
        return Skip(element, depth + 1);
      };
      for (std::uint64_t i = 0; i < scratch; ++i) {
        if (!skip_element(static_cast<Type>(kv >> 4)) ||
            !skip_element(static_cast<Type>(kv & 0x0F))) {
          return false;
        }
      }
      return true;
    }
    case kStruct: {
      EnterStruct();
      for (;;) {
        std::int16_t id = 0;
        Type t;
        if (!Field(&id, &t)) return false;
        if (t == kStop) break;
        if (!Skip(t, depth + 1)) return false;
      }
      LeaveStruct();
      return true;
    }
    default:
      return false;
  }
}

}  // namespace iomimic::parquet::thrift
