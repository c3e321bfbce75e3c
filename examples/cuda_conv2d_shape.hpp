#pragma once
// The CUDA conv2d's shape of a ResNet-18 layer (tunekit::cpu::resnet18_conv2d_tasks) at a batch
// size: shared by tune_conv2d_cuda and record_space.

#include <tunekit/kernels/cpu/resnet18.hpp>
#include <tunekit/kernels/cuda/conv2d.hpp>

#include <cstddef>
#include <cstdint>

namespace examples {

inline tunekit::cuda::Conv2dShape cuda_conv2d_shape(const tunekit::cpu::Conv2dTask& task, std::size_t batch) {
  const auto& c = task.shape;
  auto i = [](std::size_t v) { return static_cast<std::int64_t>(v); };
  return {i(batch), i(c.height), i(c.width), i(c.in_channels), i(c.out_channels), i(c.kernel_h), i(c.kernel_w),
          i(c.pad_h), i(c.pad_w), i(c.stride_h), i(c.stride_w)};
}

}  // namespace examples
