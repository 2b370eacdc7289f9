#include "cluster/cluster.h"

#define OMPI_SKIP_MPICXX 1
#include <arpa/inet.h>
#include <mpi.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <set>
#include <thread>
#include <type_traits>

namespace iomimic::cluster {
namespace {
Cluster* g_instance = nullptr;

// When the current collective began (steady clock, ns; 0: in none) and its
// name. Collectives are made by one thread at a time (they are ordered).
std::atomic<std::int64_t> g_waiting_since{0};
std::atomic<const char*> g_waiting_in{""};

// The longest nap of a patient wait: 250 us, or 1 ms on a host with more
// ranks than CPUs. There every rank waking each 250 us to poll MPI kept the
// CPUs busy polling: at 128 ranks on 4 hosts of 2 CPUs each collective of
// the results took 40-100 ms, and 1 ms naps cut the merge from 5.6 s to
// 2.1 s (docs/cluster.md, "Scale"). Set once at Init.
std::chrono::microseconds g_patient_nap_cap(250);

std::int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Marks the scope of one collective for Cluster::SecondsInCollective.
class Waiting {
 public:
  explicit Waiting(const char* name) {
    g_waiting_in.store(name, std::memory_order_relaxed);
    g_waiting_since.store(NowNs(), std::memory_order_release);
  }
  ~Waiting() { g_waiting_since.store(0, std::memory_order_release); }
  Waiting(const Waiting&) = delete;
  Waiting& operator=(const Waiting&) = delete;
};
// How long a rank waiting in a collective keeps the CPU.
enum class WaitPolicy {
  // Results, set-up, checkpoints: waits that may be long, on clients whose
  // ranks still reading need the CPU.
  kPatient,
  // The per-step barrier: a wait of about the ranks' skew in one step, whose
  // every extra microsecond lowers AU (bench/au_fidelity.py).
  kStep,
};

// Completes a non-blocking collective without burning a CPU while other
// ranks are late: MPI_Test spins for the first 50 us (kStep: then yields the
// CPU between tests up to 1 ms), then sleeps between tests, 10 us doubling
// to 250 us. A blocking collective busy-polls (or sched_yields,
// oversubscribed) until the last rank arrives, taking from a small client
// the CPU that the ranks still reading need
// (bench/results/checkpoint_cold_read.md, "Waiting ranks"); sleeping at
// once, the per-step barrier cost DLRM's 375 us steps 1.2 AU points on 2
// ranks (bench/results/hot_path.md, "AU when the storage is not the limit").
void Wait(MPI_Request request, WaitPolicy policy = WaitPolicy::kPatient) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const Clock::duration yield_until =
      policy == WaitPolicy::kStep ? std::chrono::milliseconds(1) : Clock::duration::zero();
  std::chrono::microseconds nap(10);
  for (;;) {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done != 0) return;
    const Clock::duration waited = Clock::now() - start;
    if (waited < std::chrono::microseconds(50)) continue;
    if (waited < yield_until) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, policy == WaitPolicy::kPatient ? g_patient_nap_cap
                                                           : std::chrono::microseconds(250));
  }
}

// MPI_Allreduce on MPI_COMM_WORLD, waited for with Wait.
void Allreduce(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op,
               WaitPolicy policy = WaitPolicy::kPatient) {
  MPI_Request request;
  MPI_Iallreduce(in, out, count, type, op, MPI_COMM_WORLD, &request);
  Wait(request, policy);
}

// MPI_Bcast from rank 0 on MPI_COMM_WORLD, waited for with Wait.
void Bcast(void* buffer, int count, MPI_Datatype type) {
  MPI_Request request;
  MPI_Ibcast(buffer, count, type, 0, MPI_COMM_WORLD, &request);
  Wait(request);
}

// MPI's datatype of T.
template <typename T>
MPI_Datatype MpiType() {
  static_assert(std::is_same_v<T, double> || std::is_same_v<T, std::uint64_t>);
  if constexpr (std::is_same_v<T, double>) {
    return MPI_DOUBLE;
  } else {
    return MPI_UINT64_T;
  }
}

// `value` combined with `op` over the ranks (Allreduce, counted as waiting).
template <typename T>
T ReduceOne(T value, MPI_Op op) {
  Waiting waiting("allreduce");
  T out{};
  Allreduce(&value, &out, 1, MpiType<T>(), op);
  return out;
}

// Each element of `values` combined with `op` over the ranks, which all pass
// as many (Allreduce, counted as waiting).
template <typename T>
std::vector<T> ReduceEach(const std::vector<T>& values, MPI_Op op) {
  Waiting waiting("allreduce");
  std::vector<T> out(values.size());
  if (!values.empty()) {
    Allreduce(values.data(), out.data(), static_cast<int>(values.size()), MpiType<T>(), op);
  }
  return out;
}
}  // namespace

double Cluster::SecondsInCollective(const char** name) {
  const std::int64_t since = g_waiting_since.load(std::memory_order_acquire);
  if (name != nullptr) *name = g_waiting_in.load(std::memory_order_relaxed);
  return since == 0 ? 0.0 : static_cast<double>(NowNs() - since) / 1e9;
}

bool Cluster::LauncherReachable(double timeout_seconds, std::string* where) {
  // "<jobid>.<vpid>;tcp://<ipv4>:<port>[;...]", as Open MPI 4 sets it.
  const char* uri = std::getenv("OMPI_MCA_orte_hnp_uri");
  if (uri == nullptr) return true;
  const std::string text(uri);
  const std::size_t at = text.find("tcp://");
  if (at == std::string::npos) return true;
  const std::size_t colon = text.find(':', at + 6);
  if (colon == std::string::npos) return true;
  const std::string host = text.substr(at + 6, colon - at - 6);
  const int port = std::atoi(text.c_str() + colon + 1);
  if (where != nullptr) *where = host + ":" + std::to_string(port);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (port <= 0 || port > 65535 || inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return true;
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return true;
  bool reached = false;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
    reached = true;
  } else if (errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(timeout_seconds * 1000)) == 1) {
      int error = 0;
      socklen_t len = sizeof(error);
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
      // Refused: the host answered (mpirun is gone, not the route).
      reached = error == 0 || error == ECONNREFUSED;
    }
  } else {
    reached = errno == ECONNREFUSED;
  }
  ::close(fd);
  return reached;
}

bool LaunchedByMpi() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK"}) {
    if (std::getenv(variable) != nullptr) return true;
  }
  return false;
}

Cluster& Cluster::Init(int* argc, char*** argv) {
  if (g_instance != nullptr) return *g_instance;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized && !LaunchedByMpi()) {
    // Started alone: a world of one, without MPI. Open MPI's singleton
    // MPI_Init starts an orted daemon, about 0.4 s of every lone run; a
    // back end that needs MPI (MPI-IO) initialises it itself.
    auto* c = new Cluster();
    c->mpi_ = false;
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    c->hostname_ = host;
    g_instance = c;
    return *c;
  }
  if (!initialized) {
    int provided = 0;
    // Reader threads may call MPI-IO (an MPI-IO storage back end) concurrently.
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  }
  auto* c = new Cluster();
  MPI_Comm_rank(MPI_COMM_WORLD, &c->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &c->size_);
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  c->hostname_ = host;
  // Hosts: split by shared memory, as DLIO does; count leaders.
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->rank_, MPI_INFO_NULL, &node);
  int node_rank = 0;
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_size(node, &c->ranks_on_host_);
  if (c->ranks_on_host_ > sysconf(_SC_NPROCESSORS_ONLN)) {
    g_patient_nap_cap = std::chrono::microseconds(1000);
  }
  int leader = node_rank == 0 ? 1 : 0;
  MPI_Allreduce(&leader, &c->num_hosts_, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  // Host index = number of leaders with a lower world rank than ours.
  int my_leader_rank = c->rank_;
  MPI_Bcast(&my_leader_rank, 1, MPI_INT, 0, node);
  std::vector<int> leaders(c->size_);
  int mine = leader ? c->rank_ : -1;
  MPI_Allgather(&mine, 1, MPI_INT, leaders.data(), 1, MPI_INT, MPI_COMM_WORLD);
  c->host_index_ = static_cast<int>(std::count_if(
      leaders.begin(), leaders.end(), [&](int r) { return r >= 0 && r < my_leader_rank; }));
  MPI_Comm_free(&node);
  g_instance = c;
  return *c;
}

Cluster& Cluster::Get() { return g_instance != nullptr ? *g_instance : Init(nullptr, nullptr); }

const Cluster* Cluster::Current() { return g_instance; }

void Cluster::Finalize() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
}

void Cluster::Barrier() const {
  if (!mpi_) return;
  Waiting waiting("barrier");
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  Wait(request);
}

double Cluster::SumDouble(double value) const { return mpi_ ? ReduceOne(value, MPI_SUM) : value; }

std::uint64_t Cluster::SumU64(std::uint64_t value) const {
  return mpi_ ? ReduceOne(value, MPI_SUM) : value;
}

double Cluster::MaxDouble(double value) const { return mpi_ ? ReduceOne(value, MPI_MAX) : value; }

double Cluster::MinDouble(double value) const { return mpi_ ? ReduceOne(value, MPI_MIN) : value; }

std::vector<double> Cluster::SumDoubles(const std::vector<double>& values) const {
  return mpi_ ? ReduceEach(values, MPI_SUM) : values;
}

std::vector<double> Cluster::MaxDoubles(const std::vector<double>& values) const {
  return mpi_ ? ReduceEach(values, MPI_MAX) : values;
}

std::vector<std::uint64_t> Cluster::SumU64s(const std::vector<std::uint64_t>& values) const {
  return mpi_ ? ReduceEach(values, MPI_SUM) : values;
}

namespace {
// The offsets of strings of `lens` bytes laid end to end; their total.
int Displacements(const std::vector<int>& lens, std::vector<int>* displs) {
  displs->assign(lens.size(), 0);
  int total = 0;
  for (std::size_t i = 0; i < lens.size(); ++i) {
    (*displs)[i] = total;
    total += lens[i];
  }
  return total;
}

// `all` cut back into the strings it was gathered from.
std::vector<std::string> Split(const std::string& all, const std::vector<int>& lens,
                               const std::vector<int>& displs) {
  std::vector<std::string> out(lens.size());
  for (std::size_t i = 0; i < lens.size(); ++i) out[i] = all.substr(displs[i], lens[i]);
  return out;
}
}  // namespace

std::vector<std::string> Cluster::AllGatherStrings(const std::string& value) const {
  if (!mpi_) return {value};
  // Gathered to rank 0, then broadcast: O(ranks) messages. Open MPI's
  // non-blocking all-gathers (libnbc) send every rank's piece to every rank,
  // ranks x ranks messages: over TCP at 128 ranks on 4 hosts that made the
  // results' merge take 9.9 s against 2.0 s at 64 (docs/cluster.md, "Scale").
  std::vector<std::string> all = GatherStringsToRoot(value);
  Waiting waiting("allgather");
  std::vector<int> lens(size_);
  if (rank_ == 0) {
    for (int r = 0; r < size_; ++r) lens[r] = static_cast<int>(all[r].size());
  }
  Bcast(lens.data(), size_, MPI_INT);
  std::vector<int> displs;
  std::string joined(static_cast<std::size_t>(Displacements(lens, &displs)), '\0');
  if (rank_ == 0) {
    for (int r = 0; r < size_; ++r) joined.replace(displs[r], lens[r], all[r]);
  }
  // MPI counts are ints: a broadcast above 2 GiB would need chunks, far
  // beyond what any rank gathers here (tens of bytes to kilobytes each).
  Bcast(joined.data(), static_cast<int>(joined.size()), MPI_CHAR);
  return Split(joined, lens, displs);
}

std::vector<std::string> Cluster::GatherStringsToRoot(const std::string& value) const {
  if (!mpi_) return {value};
  Waiting waiting("gather");
  int len = static_cast<int>(value.size());
  std::vector<int> lens(rank_ == 0 ? size_ : 0), displs;  // counts matter on the root only
  MPI_Request request;
  MPI_Igather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &request);
  Wait(request);
  std::string all(static_cast<std::size_t>(Displacements(lens, &displs)), '\0');
  MPI_Igatherv(value.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0,
               MPI_COMM_WORLD, &request);
  Wait(request);
  return Split(all, lens, displs);
}

Status Cluster::AgreeOnStatus(const Status& local) const {
  if (size_ == 1) return local;
  // On several hosts a failure names its host: what one host sees (a
  // node-local folder, a mount, a device) is often not what the others see.
  // Only a failure not yet agreed: a status agreed before (this rank's own,
  // named then, or another rank's "rank N failed: ...") is passed on as it is.
  const bool name_host = !local.ok() && num_hosts_ > 1 && !failure_agreed_;
  const Status named = name_host ? local.WithContext("on host " + hostname_) : local;
  std::vector<std::string> all = AllGatherStrings(named.ok() ? std::string() : named.message());
  if (!named.ok()) {
    failure_agreed_ = true;
    return named;
  }
  for (int r = 0; r < size_; ++r) {
    if (!all[r].empty()) {
      failure_agreed_ = true;
      return Status::Aborted("rank " + std::to_string(r) + " failed: " + all[r]);
    }
  }
  return Status::OK();
}

bool Cluster::BarrierAnyFailed(bool local_failed) const {
  if (!mpi_) return local_failed;
  Waiting waiting("step barrier");
  int in = local_failed ? 1 : 0;
  int out = 0;
  Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, WaitPolicy::kStep);
  return out != 0;
}

int Cluster::BarrierMax(int local) const {
  if (!mpi_) return local;
  Waiting waiting("step barrier");
  int out = 0;
  Allreduce(&local, &out, 1, MPI_INT, MPI_MAX, WaitPolicy::kStep);
  return out;
}

std::string Cluster::Broadcast(const std::string& value) const {
  if (!mpi_) return value;
  Waiting waiting("broadcast");
  int len = rank_ == 0 ? static_cast<int>(value.size()) : 0;
  Bcast(&len, 1, MPI_INT);
  std::string out = rank_ == 0 ? value : std::string(static_cast<std::size_t>(len), '\0');
  if (len > 0) Bcast(out.data(), len, MPI_CHAR);
  return out;
}

}  // namespace iomimic::cluster
