// The rows of `threadwire bench threads` (fiber column), measured with
// Boost.Fiber for comparison. Mirrors crates/bench/src/threads/fibers.rs
// and crates/bench/src/threads.rs:
//
//  - one thread, the default round_robin scheduler (set explicitly);
//  - every measurement runs inside a controller fiber, spawned and joined
//    from main, which spawns its partners on the same thread and times
//    from inside;
//  - iterations = 200,000; every fiber row uses all of it except
//    create + join, which uses half; rounds of 2 (switch rows) or 10
//    (ring);
//  - one untimed warm-up of ops/10, then 5 timed repetitions;
//    prints `<row> <median ns> <min> <max>` per operation.
//
// Boost.Fiber has no semaphore: Semaphore below is a counter under a
// boost::fibers::mutex with a boost::fibers::condition_variable, notifying
// only when someone waits (as threadwire's OS column does with std::sync).
//
// Build: g++ -O2 -std=c++17 boost_fiber.cpp -lboost_fiber -lboost_context

#include <boost/fiber/all.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <vector>

namespace fibers = boost::fibers;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::uint64_t kIterations = 200000;
constexpr int kRepetitions = 5;
constexpr std::size_t kRing = 10;

// std::hint::black_box: the compiler must assume *p is read and written.
template <typename T>
inline void black_box(T* p) {
    asm volatile("" : : "g"(p) : "memory");
}

class Semaphore {
public:
    explicit Semaphore(unsigned permits = 0) : permits_(permits) {}

    void post() {
        std::unique_lock<fibers::mutex> lock(mutex_);
        ++permits_;
        if (waiters_ != 0) {
            cv_.notify_one();
        }
    }

    void wait() {
        std::unique_lock<fibers::mutex> lock(mutex_);
        while (permits_ == 0) {
            ++waiters_;
            cv_.wait(lock);
            --waiters_;
        }
        --permits_;
    }

private:
    fibers::mutex mutex_;
    fibers::condition_variable cv_;
    unsigned permits_;
    unsigned waiters_ = 0;
};

double nanos(Clock::duration d) {
    return std::chrono::duration<double, std::nano>(d).count();
}

// threadwire's on_fiber: run the body in a fiber of its own and join it.
double on_fiber(const std::function<double()>& body) {
    double elapsed = 0;
    fibers::fiber controller([&] { elapsed = body(); });
    controller.join();
    return elapsed;
}

double mutex_row(std::uint64_t ops) {
    return on_fiber([ops] {
        fibers::mutex mutex;
        std::uint64_t counter = 0;
        auto start = Clock::now();
        for (std::uint64_t i = 0; i < ops; ++i) {
            black_box(&mutex);
            std::lock_guard<fibers::mutex> guard(mutex);
            ++counter;
            black_box(&counter);
        }
        return nanos(Clock::now() - start);
    });
}

double semaphore_row(std::uint64_t ops) {
    return on_fiber([ops] {
        Semaphore semaphore(0);
        auto start = Clock::now();
        for (std::uint64_t i = 0; i < ops; ++i) {
            black_box(&semaphore);
            semaphore.post();
            black_box(&semaphore);
            semaphore.wait();
        }
        return nanos(Clock::now() - start);
    });
}

// The controller and a partner hand a token back and forth: two switches
// per round.
double context_switch_row(std::uint64_t ops) {
    return on_fiber([ops] {
        std::uint64_t rounds = ops / 2;
        Semaphore ping(0), pong(0);
        fibers::fiber partner([&] {
            for (std::uint64_t i = 0; i < rounds; ++i) {
                ping.wait();
                pong.post();
            }
        });
        // Let the partner run up to its first wait.
        boost::this_fiber::yield();
        auto start = Clock::now();
        for (std::uint64_t i = 0; i < rounds; ++i) {
            ping.post();
            pong.wait();
        }
        auto elapsed = Clock::now() - start;
        partner.join();
        return nanos(elapsed);
    });
}

// The controller and a partner yield in turn, ops / 2 times each.
double thread_switch_row(std::uint64_t ops) {
    return on_fiber([ops] {
        std::uint64_t each = ops / 2;
        fibers::fiber partner([each] {
            for (std::uint64_t i = 0; i < each; ++i) {
                boost::this_fiber::yield();
            }
        });
        auto start = Clock::now();
        for (std::uint64_t i = 0; i < each; ++i) {
            boost::this_fiber::yield();
        }
        partner.join();
        return nanos(Clock::now() - start);
    });
}

// A token goes round a ring of fibers, each waiting on its own semaphore
// and posting the next one's.
double ring_row(std::uint64_t ops) {
    return on_fiber([ops] {
        std::uint64_t laps = ops / kRing;
        std::vector<Semaphore> semaphores(kRing);
        std::vector<fibers::fiber> members;
        members.reserve(kRing);
        for (std::size_t i = 0; i < kRing; ++i) {
            members.emplace_back([&semaphores, laps, i] {
                for (std::uint64_t lap = 0; lap < laps; ++lap) {
                    semaphores[i].wait();
                    semaphores[(i + 1) % kRing].post();
                }
            });
        }
        // Every member runs to its first wait before the clock starts.
        boost::this_fiber::yield();
        auto start = Clock::now();
        semaphores[0].post();
        for (auto& member : members) {
            member.join();
        }
        return nanos(Clock::now() - start);
    });
}

void nothing() {
    asm volatile("" ::: "memory");
}

// Default stack allocator: fixedsize_stack, 128 KiB from malloc per fiber.
double create_join_row(std::uint64_t ops) {
    return on_fiber([ops] {
        auto start = Clock::now();
        for (std::uint64_t i = 0; i < ops; ++i) {
            fibers::fiber(nothing).join();
        }
        return nanos(Clock::now() - start);
    });
}

// Extra row: stacks from a pool (pooled_fixedsize_stack, 128 KiB), as
// threadwire reuses its stacks.
double create_join_pooled_row(std::uint64_t ops) {
    return on_fiber([ops] {
        fibers::pooled_fixedsize_stack pool(128 * 1024);
        auto start = Clock::now();
        for (std::uint64_t i = 0; i < ops; ++i) {
            fibers::fiber(std::allocator_arg, pool, nothing).join();
        }
        return nanos(Clock::now() - start);
    });
}

struct Row {
    const char* name;
    std::uint64_t divisor;      // share of iterations (threads.rs share().0)
    std::uint64_t granularity;  // rounds of 2 or 10
    double (*run)(std::uint64_t);
};

std::uint64_t ops_for(std::uint64_t iterations, std::uint64_t divisor, std::uint64_t g) {
    return std::max(iterations / divisor, g) / g * g;
}

void measure(const Row& row) {
    std::uint64_t ops = ops_for(kIterations, row.divisor, row.granularity);
    row.run(ops_for(ops / 10, 1, row.granularity));  // warm-up
    std::vector<double> per_op;
    for (int r = 0; r < kRepetitions; ++r) {
        per_op.push_back(row.run(ops) / static_cast<double>(ops));
    }
    std::sort(per_op.begin(), per_op.end());
    std::printf("%s %.1f %.1f %.1f\n", row.name, per_op[per_op.size() / 2], per_op.front(),
                per_op.back());
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    fibers::use_scheduling_algorithm<fibers::algo::round_robin>();
    const Row rows[] = {
        {"mutex", 1, 1, mutex_row},
        {"semaphore", 1, 1, semaphore_row},
        {"context_switch", 1, 2, context_switch_row},
        {"thread_switch", 1, 2, thread_switch_row},
        {"thread_synchronization", 1, kRing, ring_row},
        {"create_join", 2, 1, create_join_row},
        {"create_join_pooled_stack", 2, 1, create_join_pooled_row},
    };
    for (const Row& row : rows) {
        if (argc > 1 && std::strcmp(argv[1], row.name) != 0) {
            continue;
        }
        measure(row);
    }
    return 0;
}
