# Detects CUDA, cuDNN, cuBLAS and NCCL for the optional GPU backend.
# Sets DLT_HAVE_CUDA, DLT_HAVE_NCCL, DLT_CUDA_SOURCES (the CUDA plugin's sources) and
# DLT_CUDA_LIBS (what the plugin links).
set(DLT_HAVE_CUDA 0)
set(DLT_HAVE_NCCL 0)
set(DLT_CUDA_SOURCES "")
set(DLT_CUDA_LIBS "")
if(NOT DLTRAIN_CUDA STREQUAL "OFF")
  # CMake looks for nvcc on PATH only, and NVIDIA's installer leaves /usr/local/cuda/bin off
  # it: look there too (and in CUDAToolkit_ROOT / CUDA_PATH, as FindCUDAToolkit does), and hand
  # the result to check_language and enable_language through CUDACXX.
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(DLT_NVCC nvcc PATHS ENV CUDAToolkit_ROOT ENV CUDA_PATH /usr/local/cuda PATH_SUFFIXES bin)
    if(DLT_NVCC)
      set(ENV{CUDACXX} "${DLT_NVCC}")
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  find_package(CUDAToolkit QUIET)
  find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib64 lib)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib64 lib)
  file(GLOB _dlt_cuda_files CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/lib/backend/cuda/*.cpp
       ${CMAKE_SOURCE_DIR}/lib/backend/cuda/*.cu)
  # The NCCL communicator (lib/backend/cuda/nccl_*.cpp) joins them only with NCCL, below.
  set(_dlt_nccl_files ${_dlt_cuda_files})
  list(FILTER _dlt_nccl_files INCLUDE REGEX "/nccl_[^/]*$")
  list(FILTER _dlt_cuda_files EXCLUDE REGEX "/nccl_[^/]*$")
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY AND _dlt_cuda_files)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    # .cu files are C++17 (CMake 3.25 does not know that nvcc 13 accepts C++20); they include
    # only the CUDA backend's own plain headers.
    if(NOT DEFINED CMAKE_CUDA_STANDARD)
      set(CMAKE_CUDA_STANDARD 17)
      set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    endif()
    # One CUDA runtime: the shared libcudart that CUDA::cudart links (not also cudart_static).
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    set(DLT_HAVE_CUDA 1)
    set(DLT_CUDA_SOURCES ${_dlt_cuda_files})
    set(DLT_CUDA_LIBS CUDA::cudart CUDA::cublas ${CUDNN_LIBRARY})
    include_directories(${CUDNN_INCLUDE_DIR})
    if(DLTRAIN_NCCL AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
      set(DLT_HAVE_NCCL 1)
      list(APPEND DLT_CUDA_SOURCES ${_dlt_nccl_files})
      list(APPEND DLT_CUDA_LIBS ${NCCL_LIBRARY})
      include_directories(${NCCL_INCLUDE_DIR})
    endif()
  elseif(DLTRAIN_CUDA STREQUAL "ON")
    message(FATAL_ERROR "DLTRAIN_CUDA=ON but CUDA, cuDNN or the CUDA backend sources were not found")
  endif()
endif()
