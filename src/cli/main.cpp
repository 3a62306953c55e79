#include <cstdio>

int main(int argc, char** argv) {
    std::puts("nextn: not yet");
    return 0;
}
