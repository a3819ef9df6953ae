! A Fortran code's work arrays in scratch units, as DFT codes keep wave functions: OPEN(STATUS='SCRATCH',
! FORM='UNFORMATTED') (gfortran makes it with mkostemp in $TMPDIR and unlinks it at once), records written,
! rewound and read back, the result reduced and broadcast from rank 0.
program f_scratch
  use mpi
  implicit none
  integer, parameter :: nrec = 12, n = 500
  integer :: ierr, rank, i, k, unit
  double precision :: work(n), local, total
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  open(newunit=unit, status='scratch', form='unformatted')
  do k = 1, nrec
    do i = 1, n
      work(i) = dble(rank + 1) * k + i * 1.0d-3
    end do
    write(unit) work
  end do
  rewind(unit)
  local = 0
  do k = 1, nrec
    read(unit) work
    local = local + sum(work)
  end do
  close(unit)
  call MPI_Reduce(local, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(total, 1, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  write(*, '(a,i0,a,f16.4)') 'r', rank, ': total ', total
  call MPI_Finalize(ierr)
end program f_scratch
