! How CP2K reports memory (its machine module): /proc/meminfo and /proc/self/statm read character by character
! with stream access, the fields reduced over the ranks (min, max, sum) and printed by rank 0, and the process's
! resident size reduced with max as the "peak process memory".  /proc/meminfo is opened as CP2K opens it, with no
! ACTION= (gfortran then asks for reading and writing first, which root is given); statm for reading only.
! Prints "rR: ..." lines.
program f_meminfo
  use mpi
  implicit none
  integer, parameter :: i8 = selected_int_kind(18)
  integer :: ierr, rank, nprocs, f
  integer(i8) :: mine(3), least(3), most(3), total(3), rss, peak
  character(len=13), parameter :: fields(3) = [character(len=13) :: 'MemTotal:', 'MemFree:', 'Cached:']
  character(len=10000) :: meminfo
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call read_meminfo(meminfo)
  do f = 1, 3
    mine(f) = field_bytes(trim(fields(f)))
  end do
  call MPI_Allreduce(mine, least, 3, MPI_INTEGER8, MPI_MIN, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(mine, most, 3, MPI_INTEGER8, MPI_MAX, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(mine, total, 3, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    do f = 1, 3
      write(*, '(a,a13,4i14)') 'r0: MEMORY| ', fields(f), mine(f) / 1024, least(f) / 1024, most(f) / 1024, &
        total(f) / 1024 / nprocs
    end do
  end if
  rss = resident_bytes()
  call MPI_Allreduce(rss, peak, 1, MPI_INTEGER8, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (rank == 0) write(*, '(a,i0)') 'r0: peak process memory [MiB] ', peak / 1024 / 1024
  call MPI_Finalize(ierr)
contains
  subroutine read_meminfo(text)
    character(len=*), intent(out) :: text
    integer :: i
    text = ''
    open(unit=8123, file='/proc/meminfo', access='stream', err=901)
    i = 0
    do
      i = i + 1
      if (i > len(text)) exit
      read(8123, end=900, err=900) text(i:i)
    end do
900 continue
    if (i <= len(text)) text(i:) = ''
901 continue
    close(8123, err=902)
902 continue
  end subroutine read_meminfo

  subroutine read_stream(path, text)
    character(len=*), intent(in) :: path
    character(len=*), intent(out) :: text
    integer :: u, i, ios
    text = ''
    open(newunit=u, file=path, access='stream', action='read', status='old', iostat=ios)
    if (ios /= 0) return
    do i = 1, len(text)
      read(u, iostat=ios) text(i:i)
      if (ios /= 0) exit
    end do
    if (i <= len(text)) text(i:) = ''
    close(u)
  end subroutine read_stream

  integer(i8) function field_bytes(name)
    character(len=*), intent(in) :: name
    integer :: start, ios
    integer(i8) :: kb
    field_bytes = 0
    start = index(meminfo, name)
    if (start == 0) return
    read(meminfo(start + len(name):), *, iostat=ios) kb
    if (ios == 0) field_bytes = kb * 1024
  end function field_bytes

  integer(i8) function resident_bytes()
    character(len=80) :: statm
    integer(i8) :: pages, resident
    integer :: ios
    call read_stream('/proc/self/statm', statm)
    read(statm, *, iostat=ios) pages, resident
    resident_bytes = 0
    if (ios == 0) resident_bytes = resident * 4096
  end function resident_bytes
end program f_meminfo
