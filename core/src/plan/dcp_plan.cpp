#include "plan/dcp_plan.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace iomimic::plan {

std::uint64_t DcpRank::bytes() const {
  std::uint64_t n = 0;
  for (const DcpFile& f : files) n += f.bytes;
  return n;
}

std::uint64_t DcpPlan::total_bytes() const {
  std::uint64_t n = 0;
  for (const DcpRank& r : ranks) n += r.bytes();
  return n;
}

namespace {

struct Item {
  std::string name;
  std::uint64_t item_offset = 0;
  std::uint64_t bytes = 0;
};

// DCP's split: items by size, largest first (a stable sort keeps the state
// dict's order among equals), each to the bucket with the fewest bytes.
std::vector<std::vector<Item>> SplitBySize(std::vector<Item> items, int bins) {
  std::vector<std::vector<Item>> buckets(static_cast<std::size_t>(bins));
  if (bins == 1) {
    buckets[0] = std::move(items);
    return buckets;
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.bytes > b.bytes; });
  std::vector<std::uint64_t> sizes(buckets.size(), 0);
  for (Item& item : items) {
    const std::size_t at =
        static_cast<std::size_t>(std::min_element(sizes.begin(), sizes.end()) - sizes.begin());
    sizes[at] += item.bytes;
    buckets[at].push_back(std::move(item));
  }
  return buckets;
}

}  // namespace

DcpPlan PlanDcp(const CheckpointPlan& plan, int thread_count) {
  const int bins = std::max(1, thread_count);
  DcpPlan dcp;
  for (const RankCheckpoint& rc : plan.ranks) {
    std::vector<Item> items;
    for (const CheckpointFile& f : rc.files) {
      std::vector<CheckpointPart> parts = f.parts;
      if (parts.empty()) parts.push_back({f.name, f.bytes});
      for (const CheckpointPart& p : parts) {
        std::uint64_t& size = dcp.items[p.name];
        items.push_back({p.name, size, p.bytes});
        size += p.bytes;
      }
    }
    DcpRank rank;
    rank.rank = rc.rank;
    if (!items.empty()) {
      std::vector<std::vector<Item>> buckets = SplitBySize(std::move(items), bins);
      for (std::size_t n = 0; n < buckets.size(); ++n) {
        DcpFile file;
        file.name = "__" + std::to_string(rc.rank) + "_" + std::to_string(n) + ".distcp";
        for (Item& item : buckets[n]) {
          file.chunks.push_back({std::move(item.name), item.item_offset, item.bytes, file.bytes});
          file.bytes += item.bytes;
        }
        rank.files.push_back(std::move(file));
      }
    }
    dcp.ranks.push_back(std::move(rank));
  }
  return dcp;
}

std::vector<DcpRead> DcpReaderRanges(const DcpPlan& plan, int reader, int readers) {
  const std::uint64_t r = static_cast<std::uint64_t>(std::max(0, reader));
  const std::uint64_t n = static_cast<std::uint64_t>(std::max(1, readers));
  std::vector<DcpRead> out;
  for (const DcpRank& rank : plan.ranks) {
    for (const DcpFile& file : rank.files) {
      for (const DcpChunk& chunk : file.chunks) {
        const std::uint64_t size = plan.items.at(chunk.item);
        // This reader's share of the global item: floor(size * r / n), the
        // product split (size = q n + m) so that it cannot overflow.
        const std::uint64_t begin = size / n * r + size % n * r / n;
        const std::uint64_t end = size / n * (r + 1) + size % n * (r + 1) / n;
        const std::uint64_t lo = std::max(begin, chunk.item_offset);
        const std::uint64_t hi = std::min(end, chunk.item_offset + chunk.bytes);
        if (lo >= hi) continue;
        out.push_back(
            {rank.rank, file.name, chunk.file_offset + (lo - chunk.item_offset), hi - lo});
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const DcpRead& a, const DcpRead& b) {
    return a.writer != b.writer ? a.writer < b.writer
                                : (a.file != b.file ? a.file < b.file : a.offset < b.offset);
  });
  return out;
}

std::string DcpMetadataJson(const DcpPlan& plan) {
  using json = nlohmann::ordered_json;
  json items = json::object();
  for (const auto& [name, bytes] : plan.items)
    items[name] = {{"bytes", bytes}, {"chunks", json::array()}};
  json storage = json::array();
  for (const DcpRank& rank : plan.ranks) {
    for (const DcpFile& file : rank.files) {
      for (const DcpChunk& c : file.chunks) {
        items[c.item]["chunks"].push_back({{"offset", c.item_offset}, {"bytes", c.bytes}});
        storage.push_back({{"item", c.item},
                           {"item_offset", c.item_offset},
                           {"relative_path", file.name},
                           {"offset", c.file_offset},
                           {"length", c.bytes}});
      }
    }
  }
  json meta;
  meta["format"] = "iomimic-dcp-1";
  meta["state_dict_metadata"] = std::move(items);
  meta["storage_data"] = std::move(storage);
  return meta.dump(1) + "\n";
}

}  // namespace iomimic::plan
