#pragma once
/// \file
/// The 12 distinct convolution layers of ResNet-18 at batch 1, as ready-made conv2d tasks.
///
/// The shapes are TVM's x86 workload list ("workloads of resnet18_v1 on imagenet",
/// `_WORKLOADS_AVX` in topi/x86/conv2d.py), in its order, with batch 1 added in front of its
/// fields: (batch, height, width, in_channels, out_channels, kernel_h, kernel_w, pad_h, pad_w,
/// stride_h, stride_w). The names are "resnet18.C1" to "resnet18.C12".

#include "tunekit/kernels/cpu/conv2d.hpp"

#include <array>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tunekit::cpu {

/// One convolution layer of a network: a name for records and its shape.
struct Conv2dTask {
  std::string_view name{};
  Conv2dShape shape{};

  /// FLOP per run: 2 N OC OH OW IC KH KW.
  constexpr double flop() const noexcept { return shape.flop(); }
};

/// ResNet-18's convolution layers at batch 1 (TVM's x86 workloads).
inline constexpr std::array<Conv2dTask, 12> resnet18_conv2d_tasks{{
    {"resnet18.C1", {1, 224, 224, 3, 64, 7, 7, 3, 3, 2, 2}},
    {"resnet18.C2", {1, 56, 56, 64, 64, 3, 3, 1, 1, 1, 1}},
    {"resnet18.C3", {1, 56, 56, 64, 64, 1, 1, 0, 0, 1, 1}},
    {"resnet18.C4", {1, 56, 56, 64, 128, 3, 3, 1, 1, 2, 2}},
    {"resnet18.C5", {1, 56, 56, 64, 128, 1, 1, 0, 0, 2, 2}},
    {"resnet18.C6", {1, 28, 28, 128, 128, 3, 3, 1, 1, 1, 1}},
    {"resnet18.C7", {1, 28, 28, 128, 256, 3, 3, 1, 1, 2, 2}},
    {"resnet18.C8", {1, 28, 28, 128, 256, 1, 1, 0, 0, 2, 2}},
    {"resnet18.C9", {1, 14, 14, 256, 256, 3, 3, 1, 1, 1, 1}},
    {"resnet18.C10", {1, 14, 14, 256, 512, 3, 3, 1, 1, 2, 2}},
    {"resnet18.C11", {1, 14, 14, 256, 512, 1, 1, 0, 0, 2, 2}},
    {"resnet18.C12", {1, 7, 7, 512, 512, 3, 3, 1, 1, 1, 1}},
}};

/// How often each layer of resnet18_conv2d_tasks occurs in ResNet-18 v1: the stem (C1), layer1's
/// four 3x3 convolutions (C2), then per stage a strided 3x3 (C4, C7, C10), a strided 1x1
/// downsample (C5, C8, C11) and three 3x3 (C6, C9, C12). C3 (1x1, 64 -> 64, stride 1) is in TVM's
/// list but in no ResNet-18 block; it counts once so that every listed layer is tuned. The
/// network's latency is then sum_layer occurrences x layer latency.
inline constexpr std::array<double, 12> resnet18_conv2d_occurrences{1, 4, 1, 1, 1, 3, 1, 1, 3, 1, 1, 3};

/// The ResNet-18 layer of this name ("resnet18.C6"); throws std::out_of_range naming it when
/// there is none.
inline const Conv2dTask& resnet18_conv2d_task(std::string_view name) {
  for (const auto& t : resnet18_conv2d_tasks)
    if (t.name == name) return t;
  throw std::out_of_range("no ResNet-18 convolution layer named '" + std::string(name) + "'");
}

}  // namespace tunekit::cpu
