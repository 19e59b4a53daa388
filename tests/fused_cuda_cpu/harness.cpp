// Runs rev88_train (G blocks) and rev88_predict of bundle/fused_cuda.cu on the CPU, one OS thread per
// CUDA thread; tests/test_fused_cuda_cpu.py builds it with the kernel source (four lines swapped for
// CPU stand-ins) and the launch constants as -D flags.
//   harness DIR N_TRAIN EPOCHS BATCH ALPHA MOMENTUM LR WD N_QUERY TRAIN_SHARED_BYTES PREDICT_SHARED_BYTES
// DIR holds init.bin (float32 7554), raw.bin (float32 N x 81), labels.bin and orders.bin (int64),
// query.bin (float32 M x 81); it gets params.bin, velocity.bin, scores.bin, predictions.bin and
// prints the barrier counter. Unused shared and global memory starts as NaN.
#include "shim.h"
#include "kernel.inc"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

template <typename T>
static std::vector<T> read_all(const std::string& path) {
    std::vector<T> out;
    FILE* fp = std::fopen(path.c_str(), "rb");
    if (!fp) { std::perror(path.c_str()); std::exit(2); }
    T value;
    while (std::fread(&value, sizeof(T), 1, fp) == 1) out.push_back(value);
    std::fclose(fp);
    return out;
}

template <typename T>
static void write_all(const std::string& path, const std::vector<T>& data) {
    FILE* fp = std::fopen(path.c_str(), "wb");
    std::fwrite(data.data(), sizeof(T), data.size(), fp);
    std::fclose(fp);
}

// Launch `kernel(block)` over `blocks` blocks of NT threads, `waves` blocks at a time; the blocks of a
// wave are one cluster (shim.h's split barrier over all their threads, each other's shared memory).
template <typename F>
static void launch(int blocks, int waves, size_t shared_bytes, F kernel) {
    for (int first = 0; first < blocks; first += waves) {
        const int count = blocks - first < waves ? blocks - first : waves;
        std::vector<std::vector<float4>> shared(count, std::vector<float4>((shared_bytes + 15) / 16,
                                                                            make_float4(NAN, NAN, NAN, NAN)));
        std::vector<float4*> shared_of(count);
        for (int b = 0; b < count; ++b) shared_of[b] = shared[b].data();
        std::vector<pthread_barrier_t> barriers(count), warp_barriers(count * (NT / 32));
        emu_cluster_arrivals = 0;
        emu_cluster_threads = count * NT;
        emu_shared_blocks = shared_of.data();
        for (auto& b : barriers) pthread_barrier_init(&b, nullptr, NT);
        for (auto& b : warp_barriers) pthread_barrier_init(&b, nullptr, 32);
        std::vector<std::thread> threads;
        for (int b = 0; b < count; ++b)
            for (int t = 0; t < NT; ++t)
                threads.emplace_back([&, b, t] {
                    threadIdx.x = t;
                    blockIdx.x = first + b;
                    emu_block_barrier = &barriers[b];
                    emu_warp_barrier = &warp_barriers[b * (NT / 32) + t / 32];
                    emu_shared = shared[b].data();
                    emu_cluster_phase = 0;
                    kernel();
                });
        for (auto& th : threads) th.join();
        while (emu_copies_in_flight.load() != 0) sched_yield();   // bulk copies still in flight (shim.h)
        for (auto& b : barriers) pthread_barrier_destroy(&b);
        for (auto& b : warp_barriers) pthread_barrier_destroy(&b);
    }
}

int main(int argc, char** argv) {
    if (argc != 12) { std::fprintf(stderr, "usage: see harness.cpp\n"); return 2; }
    const std::string dir = argv[1];
    const int n_train = std::atoi(argv[2]), epochs = std::atoi(argv[3]), batch = std::atoi(argv[4]);
    const float alpha = std::atof(argv[5]), momentum = std::atof(argv[6]), neg_lr = -std::atof(argv[7]);
    const float weight_decay = std::atof(argv[8]);
    const int n_query = std::atoi(argv[9]);
    const size_t train_shared = std::atol(argv[10]), predict_shared = std::atol(argv[11]);
    auto init = read_all<float>(dir + "/init.bin");
    auto raw = read_all<float>(dir + "/raw.bin");
    auto labels = read_all<long long>(dir + "/labels.bin");
    auto orders = read_all<long long>(dir + "/orders.bin");
    auto query = read_all<float>(dir + "/query.bin");
    std::vector<float> params(NSTATE, NAN), velocity(NSTATE, NAN), part(2L * G * NSTATE, NAN), pbuf(NSTATE, NAN);
    unsigned sync = 0;
    launch(G, G, train_shared, [&] {   // every block at once: they meet at the grid barrier
        rev88_train(init.data(), params.data(), velocity.data(), part.data(), pbuf.data(), &sync, raw.data(),
                    labels.data(), orders.data(), n_train, epochs, batch, alpha, momentum, neg_lr, weight_decay,
                    1u << 30);
    });
    std::vector<float> scores(10L * n_query, NAN);
    std::vector<long long> predictions(n_query, -1);
    launch((n_query + QB - 1) / QB, 1, predict_shared, [&] {
        rev88_predict(params.data(), query.data(), scores.data(), predictions.data(), n_query, alpha);
    });
    write_all(dir + "/params.bin", params);
    write_all(dir + "/velocity.bin", velocity);
    write_all(dir + "/scores.bin", scores);
    write_all(dir + "/predictions.bin", predictions);
    std::printf("%u\n", sync);
    return 0;
}
